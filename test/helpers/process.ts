import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { registerServer } from './contract';
import { requestServer, type TestRequestInit } from './request';

const root = path.resolve(import.meta.dirname, '..', '..');

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  output(): string;
  /** Resolves when the process has exited. */
  exited: Promise<number | null>;
  request(path: string, init?: TestRequestInit): Promise<Response>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** How a server process is started: node's arguments and its working folder. */
export interface Launch {
  cwd: string;
  args: string[];
}

/** The server's source through tsx, from this checkout. */
export const sourceLaunch = (nodeArgs: string[] = []): Launch => ({
  cwd: root,
  args: [...nodeArgs, '--import', 'tsx', 'src-server/cli.ts'],
});

/** The compiled server (`out/server/cli.js`, built by build/build.mjs), as `npm start` runs it. */
export const compiledLaunch = (): Launch => ({ cwd: root, args: ['--enable-source-maps', 'out/server/cli.js'] });

const serverEnv = (env: Record<string, string>) => ({
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  PORT: '0',
  AUTH_ENABLED: 'false',
  // Tests poll as fast as they can (until(): every 20 ms), far above any person's rate: a test that is about request
  // limits, or that runs a client as people do (the e2e studio), sets its own.
  RATE_LIMIT_PER_MINUTE: '0',
  ...env,
});

/** The headless server as its own process (`src-server/cli.ts`), so a test can kill it for real. */
export async function spawnServer(
  env: Record<string, string>,
  timeoutMs = 60_000,
  nodeArgs: string[] = [],
  launch = sourceLaunch(nodeArgs),
): Promise<ServerProcess> {
  const child = spawn(process.execPath, launch.args, {
    cwd: launch.cwd,
    env: serverEnv(env),
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

  // Every answer of this server is checked against the OpenAPI document it serves (contract.ts).
  const contract = registerServer(url);
  void exited.then(() => contract.stop());
  return {
    url,
    child,
    output: () => output,
    exited,
    request: (p, init) => requestServer(url, p, init),
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** A server process expected to stop by itself (a failing start): its exit code, all it wrote, how long it ran. */
export function runServerToExit(
  env: Record<string, string>,
  { launch = sourceLaunch(), timeoutMs = 60_000 }: { launch?: Launch; timeoutMs?: number } = {},
): Promise<{ code: number | null; output: string; ms: number }> {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(process.execPath, launch.args, {
      cwd: launch.cwd,
      env: serverEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output, ms: Date.now() - started });
    });
  });
}
