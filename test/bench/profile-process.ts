/** What `npm run profile` and `npm run profile:paced` read of the server process: /proc, and its V8 CPU profile. */
import fs from 'node:fs';
import path from 'node:path';
import { spawnServer, type ServerProcess } from '../helpers/process';

const root = path.resolve(import.meta.dirname, '..', '..');
/** Where the server's V8 CPU profile goes (PROFILE_CPU=1): emptied when a profiled server starts. */
const profileDir = path.join(root, 'test-results', 'profile');
const withCpuProfile = process.env.PROFILE_CPU === '1';

/**
 * The compiled server as the profiles measure it: `out/server/cli.js` with source maps, and with PROFILE_CPU=1 its V8
 * CPU profile, summed by profileSummary() once it has stopped.
 */
export function spawnProfiledServer(env: Record<string, string>): Promise<ServerProcess> {
  fs.rmSync(profileDir, { recursive: true, force: true });
  return spawnServer(env, 60_000, [], {
    cwd: root,
    args: [
      ...(withCpuProfile ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []),
      ...(process.env.SERVER_NODE_FLAGS ? process.env.SERVER_NODE_FLAGS.split(' ') : []),
      '--enable-source-maps',
      'out/server/cli.js',
    ],
  });
}

/** With PROFILE_CPU=1, the stopped server's CPU profile summed (summariseCpuProfile()). */
export function profileSummary(): void {
  if (withCpuProfile) summariseCpuProfile(profileDir);
}

/**
 * The time the process's main thread (the event loop) has run, and has been ready to run but waited for a CPU
 * (/proc/<pid>/schedstat, ns). The CPU profile samples the thread whether or not it has a CPU: a socket write that
 * wakes the process at the other end (PostgreSQL, a client) often hands it the CPU, and the wait shows as `writev`.
 */
export function scheduling(pid: number): { runMs: number; waitMs: number } {
  const [run, wait] = fs.readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ').map(Number);
  return { runMs: run! / 1e6, waitMs: wait! / 1e6 };
}

/** What a process has written so far, to files and sockets alike: its write system calls and their bytes (/proc). */
export function writes(pid: number): { calls: number; bytes: number } {
  const io = fs.readFileSync(`/proc/${pid}/io`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(io)?.[1] ?? 0);
  return { calls: field('syscw'), bytes: field('wchar') };
}

/** Self time by package and by function, over the whole profile (the warm-up and start-up included). */
export function summariseCpuProfile(profileDir: string): void {
  const file = fs.readdirSync(profileDir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) return;
  const profile = JSON.parse(fs.readFileSync(path.join(profileDir, file), 'utf8')) as {
    nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
    samples: number[];
    timeDeltas: number[];
  };
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const where = (url: string) =>
    /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1] ??
    (url.includes('out/server') ? 'the server' : url || 'native');
  const sum = (key: (node: (typeof profile.nodes)[number]) => string) => {
    const totals = new Map<string, number>();
    for (const [id, us] of self) {
      const k = key(byId.get(id)!);
      totals.set(k, (totals.get(k) ?? 0) + us);
    }
    const busy = [...totals].filter(([k]) => !k.startsWith('(idle)'));
    const all = busy.reduce((a, [, us]) => a + us, 0);
    return busy.sort((a, b) => b[1] - a[1]).map(([k, us]) => `${((us / all) * 100).toFixed(1).padStart(5)}%  ${k}`);
  };
  const name = (node: (typeof profile.nodes)[number]) => node.callFrame.functionName || '(anonymous)';
  console.log(`\nCPU profile ${path.join(profileDir, file)}, busy time by package:`);
  console.log(
    sum((node) => (name(node).startsWith('(') ? name(node) : where(node.callFrame.url)))
      .slice(0, 15)
      .join('\n'),
  );
  console.log('\nby function:');
  console.log(
    sum((node) => `${name(node)} ${where(node.callFrame.url)}:${node.callFrame.lineNumber}`)
      .slice(0, 30)
      .join('\n'),
  );
}
