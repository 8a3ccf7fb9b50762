/**
 * What a server process and every process under it use, read from /proc (Linux only): a server that does its work in
 * child processes (LangGraph's dev CLI runs tsx, which runs the server, which runs esbuild) is measured whole.
 */
import fs from 'node:fs/promises';

/** /proc reports CPU time in USER_HZ ticks, which the kernel's ABI fixes at 100 a second. */
const TICK_MS = 10;

interface ProcStat {
  pid: number;
  ppid: number;
  /** utime + stime + cutime + cstime: its own CPU and that of its children that have exited, in ticks. */
  ticks: number;
}

async function readStat(pid: number): Promise<ProcStat | undefined> {
  const text = await fs.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (!text) return undefined;
  // The command name (field 2) is in parentheses and may hold spaces: fields are counted after its closing one.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const [utime, stime, cutime, cstime] = fields.slice(11, 15).map(Number);
  return { pid, ppid: Number(fields[1]), ticks: utime! + stime! + cutime! + cstime! };
}

/** The process and its descendants now living, the process first. */
async function processTree(root: number): Promise<ProcStat[]> {
  const pids = (await fs.readdir('/proc')).filter((name) => /^\d+$/.test(name)).map(Number);
  const stats = (await Promise.all(pids.map(readStat))).filter((s) => s !== undefined);
  const tree = stats.filter((s) => s.pid === root);
  for (let i = 0; i < tree.length; i++) tree.push(...stats.filter((s) => s.ppid === tree[i]!.pid));
  return tree;
}

/**
 * CPU time (user + system) the process tree has used so far, in ms. Children that exited count once their parent
 * has waited for them, so the difference of two readings is what the tree used in between.
 */
export async function cpuMs(pid: number): Promise<number> {
  const tree = await processTree(pid);
  if (tree.length === 0) throw new Error(`no process ${pid}`);
  return tree.reduce((sum, s) => sum + s.ticks, 0) * TICK_MS;
}

/** CPU time (user + system) every process named `command` has used so far (PostgreSQL's backends), in ms. */
export async function commandCpuMs(command: string): Promise<number> {
  const pids = (await fs.readdir('/proc')).filter((name) => /^\d+$/.test(name)).map(Number);
  const named = await Promise.all(
    pids.map(async (pid) =>
      (await fs.readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '')).trim() === command ? pid : 0,
    ),
  );
  const stats = await Promise.all(named.filter((pid) => pid > 0).map(readStat));
  return stats.reduce((sum, s) => sum + (s?.ticks ?? 0), 0) * TICK_MS;
}

/** Peak resident memory (VmHWM) of the processes of the tree now living, summed, in MiB. */
export async function treePeakRssMiB(pid: number): Promise<number> {
  const tree = await processTree(pid);
  if (tree.length === 0) throw new Error(`no process ${pid}`);
  const peaks = await Promise.all(
    tree.map(async ({ pid }) => {
      const status = await fs.readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
      return Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
    }),
  );
  return peaks.reduce((sum, kb) => sum + kb, 0) / 1024;
}

/** Resident memory (VmRSS) of one process now, in MiB. */
export async function rssMiB(pid: number): Promise<number> {
  const status = await fs.readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]) / 1024;
}
