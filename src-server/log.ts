/**
 * Log lines are exactly `<ISO 8601 timestamp> <LEVEL> <logger> <message>` on stdout.
 * Known secrets are masked in every line, whatever the caller passed in.
 */

export type LogLevel = 'DEBUG' | 'INFO' | 'WARNING' | 'ERROR';

const rank: Record<LogLevel, number> = { DEBUG: 10, INFO: 20, WARNING: 30, ERROR: 40 };

let threshold: LogLevel = 'INFO';
const secrets = new Set<string>();
let write: (line: string) => void = (line) => process.stdout.write(line);

export function setLogLevel(level: LogLevel): void {
  threshold = level;
}

/** Values that must never reach a log line (API keys, client secrets, passwords). */
export function registerSecret(value: string | undefined): void {
  if (value && value.length >= 6) secrets.add(value);
}

/** Redirects output, for tests that assert on log lines. Returns a function that restores stdout. */
export function captureLogs(sink: (line: string) => void): () => void {
  const previous = write;
  write = sink;
  return () => {
    write = previous;
  };
}

function mask(text: string): string {
  let out = text;
  for (const secret of secrets) out = out.split(secret).join('***');
  return out;
}

function describe(error: unknown): string {
  if (error instanceof Error) return error.stack ?? `${error.name}: ${error.message}`;
  return String(error);
}

export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  /** With an error, the traceback follows the message on the next lines. */
  error(message: string, error?: unknown): void;
  enabled(level: LogLevel): boolean;
}

export function getLogger(name: string): Logger {
  const emit = (level: LogLevel, message: string, error?: unknown) => {
    if (rank[level] < rank[threshold]) return;
    const body = error === undefined ? message : `${message}\n${describe(error)}`;
    write(`${new Date().toISOString()} ${level} ${name} ${mask(body)}\n`);
  };
  return {
    debug: (m) => emit('DEBUG', m),
    info: (m) => emit('INFO', m),
    warn: (m) => emit('WARNING', m),
    error: (m, e) => emit('ERROR', m, e),
    enabled: (level) => rank[level] >= rank[threshold],
  };
}

/**
 * Writes a line that deliberately contains a secret the user must see, such as the studio link
 * with its per-launch token (the way Jupyter prints its link).
 */
export function printUnmasked(name: string, message: string): void {
  write(`${new Date().toISOString()} INFO ${name} ${message}\n`);
}
