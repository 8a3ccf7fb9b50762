import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..', '..');

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  output(): string;
  /** Resolves when the process has exited. */
  exited: Promise<number | null>;
  request(path: string, init?: RequestInit & { json?: unknown }): Promise<Response>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** The headless server as its own process (`src-server/cli.ts`), so a test can kill it for real. */
export async function spawnServer(
  env: Record<string, string>,
  timeoutMs = 60_000,
  nodeArgs: string[] = [],
): Promise<ServerProcess> {
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', 'src-server/cli.ts'], {
    cwd: root,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: '0', AUTH_ENABLED: 'false', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));

  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), timeoutMs);
    const check = () => {
      const match = /listening on (http:\/\/[\d.]+:\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', check);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`server exited while starting:\n${output}`));
    });
  });

  return {
    url,
    child,
    output: () => output,
    exited,
    request(p, init = {}) {
      const headers = new Headers(init.headers);
      let body = init.body;
      if (init.json !== undefined) {
        headers.set('content-type', 'application/json');
        body = JSON.stringify(init.json);
      }
      return fetch(`${url}${p}`, { ...init, headers, body });
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}
