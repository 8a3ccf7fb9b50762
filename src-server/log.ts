import { PERSONAL_TOKEN_PREFIX } from './contracts/auth';
import { OAUTH_ACCESS_PREFIX, OAUTH_REFRESH_PREFIX } from './contracts/oauth';

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

/**
 * Personal access tokens, and the tokens MCP clients sign in for, are too many to register one by one, and each is
 * recognisable by its form: whatever quotes one (a request line, an error) shows only its prefix.
 */
const ISSUED_TOKENS = new RegExp(
  `(${PERSONAL_TOKEN_PREFIX}|${OAUTH_ACCESS_PREFIX}|${OAUTH_REFRESH_PREFIX})[A-Za-z0-9_-]{43}`,
  'g',
);

function mask(text: string): string {
  let out = text.replace(ISSUED_TOKENS, '$1***');
  for (const secret of secrets) out = out.split(secret).join('***');
  return out;
}

/**
 * Callers put user text (a reason, a model name, a path) into messages: a CR or LF in it would start a forged
 * line. Every control character (C0, DEL, C1, and the Unicode line and paragraph separators) is written as an
 * escape instead, so one call is always one line.
 */
export function escapeControl(text: string): string {
  // eslint-disable-next-line no-control-regex -- finding control characters is the point
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, (c) => {
    const named: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };
    return named[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  });
}

/**
 * An error's traceback on the lines after the message. Its own message is escaped like any message (it may
 * quote user text); the frames the runtime wrote stay one per line, each indented, so that no line of a
 * traceback can pass for a log line of its own.
 */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return escapeControl(String(error));
  const head = `${error.name}: ${escapeControl(error.message)}`;
  const stack = error.stack ?? '';
  const at = error.message ? stack.indexOf(error.message) : -1;
  const frames = (at >= 0 ? stack.slice(at + error.message.length) : stack.slice(stack.indexOf('\n') + 1))
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => escapeControl(line))
    .map((line) => (/^\s/.test(line) ? line : `    ${line}`));
  return [head, ...frames].join('\n');
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
    const line = escapeControl(mask(message));
    const body = error === undefined ? line : `${line}\n${mask(describe(error))}`;
    write(`${new Date().toISOString()} ${level} ${name} ${body}\n`);
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
  write(`${new Date().toISOString()} INFO ${name} ${escapeControl(message)}\n`);
}
