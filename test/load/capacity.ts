/**
 * Capacity under load: N runs started at once, each streamed to its end, beside the same N clients reading the
 * stand-in runtime directly (the physical limit of the machine for that load). Used by `npm run bench` (its capacity
 * row) and by the reliability suite's load test, which fails when any run fails.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { readPieces } from '../helpers/sse';

const root = path.resolve(import.meta.dirname, '..', '..');

export interface ModelProcess {
  url: string;
  child: ChildProcess;
  /** Every chat answer from now on: `tokens` tokens, `delayMs` apart. */
  script(tokens: number, delayMs: number): Promise<void>;
  stop(): Promise<void>;
}

/** The stand-in runtime in a process of its own (test/fixtures/model-fake-process.ts). */
export async function startModelProcess(): Promise<ModelProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/model-fake-process.ts'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) resolve(match[1]!);
    });
    child.once('exit', () => reject(new Error(`the model stand-in exited while starting: ${output}`)));
  });
  return {
    url,
    child,
    async script(tokens, delayMs) {
      const res = await fetch(`${url}/__script`, {
        method: 'POST',
        body: JSON.stringify({ tokens: Array.from({ length: tokens }, (_, i) => `w${i} `), delayMs }),
      });
      if (!res.ok) throw new Error(`scripting the stand-in failed: ${res.status}`);
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

export interface Timing {
  /** Seconds from the request to the first token. */
  firstToken: number;
  /** Seconds from the request to the end. */
  total: number;
}

export interface Summary {
  p50: number;
  p95: number;
}

export function summarise(values: number[]): Summary {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? NaN;
  return { p50: at(0.5), p95: at(0.95) };
}

/** `calls` chat calls one after another, as a run's phases make them, by each of `clients` clients at once. */
export async function directCapacity(modelUrl: string, clients: number, calls = 3): Promise<Timing[]> {
  return Promise.all(
    Array.from({ length: clients }, async () => {
      const started = performance.now();
      let first = 0;
      for (let call = 0; call < calls; call++) {
        const res = await fetch(`${modelUrl}/api/chat`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'fake-model', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
        });
        await readPieces(res, '\n', (line) => {
          if (!first && line.includes('"content":"w')) first = performance.now();
          return false;
        });
      }
      return { firstToken: (first - started) / 1000, total: (performance.now() - started) / 1000 };
    }),
  );
}

export interface RunOutcome extends Timing {
  runId: string;
  /** The event that ended the stream (`run_done` when all went well). */
  end: string;
  errorDetail: string | null;
  /** Ids of the events received, in order (one connection, or the cut one and its re-attach). */
  ids: number[];
  /** The frames' data, as received, in order. */
  data: string[];
  /** Whether this run's reader was cut mid-stream and re-attached. */
  cut: boolean;
  /** Seconds from the request to the answer's headers and to the first event of each type (`npm run profile:paced`). */
  steps: Record<string, number>;
}

export interface ServiceLoad {
  /** Server base URLs; runs are started round robin across them. */
  urls: string[];
  runs: number;
  /** Every `cutEvery`-th reader is cut after `cutAfterTokens` tokens and re-attaches on the next URL. */
  cutEvery?: number;
  cutAfterTokens?: number;
  headers?: Record<string, string>;
  /** Told when a run's stream has begun (its run_start): the run is stored and executing. */
  onStarted?: (runId: string) => void;
}

interface Frame {
  id: number;
  event: string;
  data: string;
}

/** Reads SSE frames: id, event name and the data text, nothing parsed beyond what the load needs. */
function readFrames(res: Response, onFrame: (frame: Frame) => boolean): Promise<void> {
  let frame: Frame = { id: 0, event: '', data: '' };
  return readPieces(res, '\n', (line) => {
    if (line === '') {
      const done = frame.event !== '' && onFrame(frame);
      frame = { id: 0, event: '', data: '' };
      return done;
    }
    if (line.startsWith('id: ')) frame.id = Number(line.slice(4));
    else if (line.startsWith('event: ')) frame.event = line.slice(7);
    else if (line.startsWith('data: ')) frame.data = line.slice(6);
    return false;
  });
}

const ENDS = new Set(['run_done', 'run_error', 'run_cancelled', 'run_rejected', 'gate_waiting']);

/** N runs at once, each followed to its end over SSE; some readers cut and re-attached on another process. */
export async function serviceCapacity(load: ServiceLoad): Promise<RunOutcome[]> {
  const headers = { 'content-type': 'application/json', ...load.headers };
  return Promise.all(
    Array.from({ length: load.runs }, async (_, i): Promise<RunOutcome> => {
      const url = load.urls[i % load.urls.length]!;
      const cut = load.cutEvery !== undefined && i % load.cutEvery === 0;
      const started = performance.now();
      const outcome: RunOutcome = {
        runId: '',
        end: '',
        errorDetail: null,
        ids: [],
        data: [],
        cut,
        steps: {},
        firstToken: NaN,
        total: NaN,
      };
      let tokens = 0;
      let reattached = false;
      const onFrame = (frame: Frame): boolean => {
        outcome.ids.push(frame.id);
        outcome.steps[frame.event] ??= (performance.now() - started) / 1000;
        outcome.data.push(frame.data);
        if (frame.event === 'run_start' && !outcome.runId) {
          outcome.runId = (JSON.parse(frame.data) as { run_id: string }).run_id;
          load.onStarted?.(outcome.runId);
        }
        if (frame.event === 'token' && ++tokens === 1) outcome.firstToken = (performance.now() - started) / 1000;
        if (ENDS.has(frame.event)) {
          outcome.end = frame.event;
          if (frame.event === 'run_error') {
            outcome.errorDetail = (JSON.parse(frame.data) as { error_detail: string }).error_detail;
          }
          return true;
        }
        // Cut once, on the first connection, at the token that makes the count: a re-attach whose first event is not a
        // token (a run_resumed, after a takeover) reads on.
        return cut && !reattached && frame.event === 'token' && tokens === (load.cutAfterTokens ?? 50);
      };
      const res = await fetch(`${url}/graphs/summary/run`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ message: `capacity ${i}` }),
      });
      outcome.steps.headers = (performance.now() - started) / 1000;
      if (!res.ok) {
        return { ...outcome, end: `http ${res.status}`, errorDetail: await res.text(), total: NaN };
      }
      // A stream the server breaks is a run that did not complete for this client: counted, not thrown.
      const broken = (error: Error) => {
        outcome.end = `stream broken (${error.message})`;
      };
      await readFrames(res, onFrame).catch(broken);
      if (cut && !outcome.end) {
        // Cut mid-stream: re-attach where it stopped, on another process.
        const other = load.urls[(i + 1) % load.urls.length]!;
        reattached = true;
        const again = await fetch(`${other}/runs/${outcome.runId}/stream`, {
          headers: { ...load.headers, 'last-event-id': String(outcome.ids.at(-1)) },
        });
        if (again.status === 200) await readFrames(again, onFrame).catch(broken);
        else outcome.end = `re-attach http ${again.status}`;
      }
      outcome.total = (performance.now() - started) / 1000;
      return outcome;
    }),
  );
}

/** A run's whole stored stream, from its first event: what a late reader gets. */
export async function storedStream(
  url: string,
  runId: string,
  headers: Record<string, string> = {},
): Promise<{ ids: number[]; data: string[] }> {
  const res = await fetch(`${url}/runs/${runId}/stream`, { headers });
  const ids: number[] = [];
  const data: string[] = [];
  await readFrames(res, (frame) => {
    ids.push(frame.id);
    data.push(frame.data);
    return ENDS.has(frame.event);
  });
  return { ids, data };
}

/** Peak resident memory of a process (VmHWM) in MiB, Linux only. */
export async function peakRssMiB(pid: number): Promise<number> {
  const fs = await import('node:fs/promises');
  const status = await fs.readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1]);
  return Number.isFinite(kb) && kb > 0 ? kb / 1024 : NaN;
}
