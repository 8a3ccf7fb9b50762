/**
 * LangGraph's own API server as a peer of this service in `npm run bench`: `langgraphjs dev` (its in-memory dev
 * server) serving the same summary graph (summary-graph.ts) against the same stand-in model, measured with the same
 * workloads and the same client code as the service, each beside the other in turn.
 *
 * The CLI is installed in this folder (package.json here), on first use, so that the service's own install does not
 * grow. Its peers (@langchain/langgraph, @langchain/core, the checkpointer) are not installed here: Node finds them in
 * the service's node_modules above, so the server runs the very LangGraph the service runs.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { initialState } from '../../../src-server/engine';
import type { ModelFake } from '../../fixtures/fake-models';
import { freePort } from '../../helpers/ports';
import type { ServerProcess } from '../../helpers/process';
import { readPieces } from '../../helpers/sse';
import { median, ms, type BenchRow } from '../bench-table';
import { cpuMs, treePeakRssMiB } from '../process-usage';

const HERE = import.meta.dirname;
const CLI = path.join(HERE, 'node_modules', '.bin', 'langgraphjs');
/** Where the dev server keeps its in-memory state between starts: removed before and after, for a fresh server. */
const STATE_DIR = path.join(HERE, '.langgraph_api');
const GRAPH_ID = 'summary';
/**
 * Runs the dev server executes at once in the main rows. Its default, 10, would hold the 32 clients back where the
 * bench lifts the service's own limits (LOCAL_LLM_MAX_CONCURRENT=64); each idle executor also looks for new runs every
 * 0 to 1 s, so more of them start a run sooner. The server as it ships (its default) is measured too, at 8 and 32
 * clients: that is how the target's own figures were taken, and how `langgraphjs dev` runs for whoever starts it.
 */
const RUNS_AT_ONCE = 64;
/** The dev server's own default (`--n-jobs-per-worker`), named in the rows that measure it. */
const SHIPPED_RUNS_AT_ONCE = 10;
/** Each node of the summary graph streams the stand-in's whole answer: three nodes of `REPLY`. */
const REPLY = ['a', 'b', 'c'];
const EXPECTED_TEXT = REPLY.join('').repeat(3);

export interface LangGraphServer {
  url: string;
  /** The CLI's process: the server runs in processes under it. */
  pid: number;
  output(): string;
  stop(): Promise<void>;
}

interface Throughput {
  rps: number;
  p50: number;
  p95: number;
}

/** run.ts's throughput(): `clients` clients at once, each making `runsPerClient` runs one after another. */
type MeasureThroughput = (clients: number, runsPerClient: number, once: () => Promise<void>) => Promise<Throughput>;

async function ensureInstalled(): Promise<void> {
  if (existsSync(path.join(HERE, 'node_modules'))) return;
  process.stderr.write(`bench: installing LangGraph's CLI in ${HERE} (npm ci --legacy-peer-deps), once\n`);
  // stdout too goes to stderr: the bench's stdout is its table.
  const child = spawn('npm', ['ci', '--legacy-peer-deps', '--no-audit', '--no-fund'], {
    cwd: HERE,
    stdio: ['ignore', process.stderr, 'inherit'],
  });
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`npm ci --legacy-peer-deps in ${HERE} exited with ${code}`);
}

/**
 * `langgraphjs dev` on a free port, in memory, without a browser, reloading or analytics, serving summary-graph.ts
 * against the stand-in at `modelUrl` with the catalog in `generatedDir`. Resolves once it answers /ok.
 */
export async function startLangGraphServer(
  modelUrl: string,
  generatedDir: string,
  /** Runs it executes at once; undefined leaves the CLI's default. */
  runsAtOnce?: number,
): Promise<LangGraphServer> {
  await ensureInstalled();
  await fs.rm(STATE_DIR, { recursive: true, force: true });
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(
    process.execPath,
    [
      CLI,
      'dev',
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--no-browser',
      '--no-reload',
      ...(runsAtOnce === undefined ? [] : ['--n-jobs-per-worker', String(runsAtOnce)]),
    ],
    {
      cwd: HERE,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        LANGGRAPH_CLI_NO_ANALYTICS: '1',
        LANGSMITH_TRACING: 'false',
        BROWSER: 'none',
        LOCAL_LLM_BASE: modelUrl,
        GENERATED_DIR: generatedDir,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      // A group of its own: the CLI, tsx and the server under it are stopped together.
      detached: true,
    },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGTERM');
    await exited;
    await fs.rm(STATE_DIR, { recursive: true, force: true });
  };

  const deadline = performance.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`langgraphjs dev exited while starting:\n${output}`);
    const res = await fetch(`${url}/ok`).catch(() => undefined);
    if (res?.ok) break;
    if (performance.now() > deadline) {
      await stop();
      throw new Error(`langgraphjs dev did not answer /ok within 120 s:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { url, pid: child.pid!, output: () => output, stop };
}

interface Frame {
  event: string;
  data: unknown;
}

/** How a client of one server starts a short run and reads it. */
interface RunClient {
  request(): { url: string; body: unknown };
  /** The text of a token frame; undefined for other frames. */
  tokenText(frame: Frame): string | undefined;
  /** Why the stream does not show a completed run, when it does not. */
  failure(frames: Frame[]): string | undefined;
}

const serviceClient = (baseUrl: string): RunClient => ({
  request: () => ({ url: `${baseUrl}/graphs/${GRAPH_ID}/run`, body: { message: 'short' } }),
  tokenText: (frame) => (frame.event === 'token' ? (frame.data as { text: string }).text : undefined),
  failure: (frames) =>
    frames.at(-1)?.event === 'run_done' ? undefined : `the run ended with ${JSON.stringify(frames.at(-1))}`,
});

/**
 * A run on a new thread (so each run is checkpointed, as the service's are), tokens in the custom stream mode. The dev
 * server ends the stream up to 500 ms after the run's last event: its reader waits that long for a "done" its in-memory
 * queue never sends, then looks at the run's status. A client reading to the end, as LangGraph's SDK does, waits too.
 */
const langGraphClient = (baseUrl: string): RunClient => ({
  request: () => {
    const threadId = crypto.randomUUID();
    return {
      url: `${baseUrl}/threads/${threadId}/runs/stream`,
      body: {
        assistant_id: GRAPH_ID,
        if_not_exists: 'create',
        stream_mode: ['updates', 'custom'],
        input: initialState(threadId, 'short', ''),
      },
    };
  },
  tokenText: (frame) => (frame.event === 'custom' ? (frame.data as { text: string }).text : undefined),
  failure: (frames) => {
    const error = frames.find((frame) => frame.event === 'error');
    return error && `the run failed: ${JSON.stringify(error.data)}`;
  },
});

/**
 * One run: the request, then its event stream read to the end frame by frame, each frame's data JSON-parsed (the same
 * client work against both servers). Resolves with the time to its first token; throws unless every node's answer
 * was streamed and the run completed.
 */
async function streamRun(client: RunClient): Promise<number> {
  const { url, body } = client.request();
  const started = performance.now();
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${url} answered ${res.status}: ${await res.text()}`);
  let firstToken = 0;
  let text = '';
  const frames: Frame[] = [];
  await readPieces(res, '\n\n', (piece) => {
    const lines = piece.split('\n');
    const field = (name: string) =>
      lines
        .find((line) => line.startsWith(`${name}:`))
        ?.slice(name.length + 1)
        .trim();
    const data = field('data');
    if (data === undefined) return false;
    const frame = { event: field('event') ?? 'message', data: JSON.parse(data) as unknown };
    frames.push(frame);
    const token = client.tokenText(frame);
    if (token !== undefined) {
      firstToken ||= performance.now() - started;
      text += token;
    }
    return false;
  });
  const failure = client.failure(frames);
  if (failure) throw new Error(`${url}: ${failure}`);
  if (text !== EXPECTED_TEXT) throw new Error(`${url} streamed "${text}", not "${EXPECTED_TEXT}"`);
  return firstToken;
}

const runsPerSecond = (t: Throughput) => `${t.rps.toFixed(1)} runs/s (${ms(t.p50)} / ${ms(t.p95)})`;

/** The service's throughput over LangGraph's API server's at 8 and 32 clients must reach this; 8× is the aim. */
const TARGET_RATIO = 5.6;
const AIMED_RATIO = 8;

interface Peer {
  client: RunClient;
  pid: number;
  /** CPU time of its process tree over the throughput runs measured so far. */
  cpuMs: number;
}

/**
 * Throughput of this service (`peers[0]`) and a LangGraph server (`peers[1]`), each in turn at each client count:
 * a row per count, with the ratio against the target at the counts it names. Adds each peer's CPU time to its cpuMs.
 */
async function throughputRows(
  peers: Peer[],
  counts: number[],
  throughput: MeasureThroughput,
  langGraphName: string,
): Promise<{ rows: BenchRow[]; runs: number }> {
  // The first runs of a server load what it loads lazily (its graph, the model client): not measured.
  for (let i = 0; i < 3; i++) for (const peer of peers) await streamRun(peer.client);
  const rows: BenchRow[] = [];
  let runs = 0;
  for (const clients of counts) {
    const results: Throughput[] = [];
    for (const peer of peers) {
      const before = await cpuMs(peer.pid);
      results.push(
        await throughput(clients, 6, async () => {
          await streamRun(peer.client);
        }),
      );
      peer.cpuMs += (await cpuMs(peer.pid)) - before;
    }
    const [ours, theirs] = results;
    runs += clients * 6;
    const ratio = ours!.rps / theirs!.rps;
    const targeted = clients > 1;
    rows.push({
      benchmark: `This service vs ${langGraphName}: 3-node runs, ${clients} concurrent client${clients > 1 ? 's' : ''} (p50 / p95 latency)`,
      service: runsPerSecond(ours!),
      baseline: `${runsPerSecond(theirs!)} LangGraph API server`,
      ratio: `${ratio.toFixed(1)}×${targeted ? ` (${((ratio / AIMED_RATIO) * 100).toFixed(0)}% of ${AIMED_RATIO}×)` : ''}`,
      target: targeted ? `≥ ${TARGET_RATIO}× (${AIMED_RATIO}× aimed)` : '',
      met: targeted ? (ratio >= TARGET_RATIO ? 'yes' : 'no') : '',
    });
  }
  return { rows, runs };
}

/**
 * This service (`service`, already started on the bench's database) and LangGraph's API server, started here on the
 * same stand-in (`model`, scripted here) and catalog: throughput at 1, 8 and 32 clients (`throughput` of run.ts, each
 * server in turn at each count), time to first token, server CPU per run over the throughput runs, and peak memory;
 * then the throughput at 8 and 32 clients again against the server as it ships (its default runs at once).
 */
export async function langGraphServerRows(options: {
  service: ServerProcess;
  model: ModelFake;
  generatedDir: string;
  throughput: MeasureThroughput;
}): Promise<BenchRow[]> {
  const { service, model, generatedDir, throughput } = options;
  model.reply(REPLY);
  const rows: BenchRow[] = [];
  const serviceClientOf = () => ({ client: serviceClient(service.url), pid: service.child.pid!, cpuMs: 0 });
  const langGraph = await startLangGraphServer(model.url, generatedDir, RUNS_AT_ONCE);
  try {
    const peers: Peer[] = [serviceClientOf(), { client: langGraphClient(langGraph.url), pid: langGraph.pid, cpuMs: 0 }];
    const measured = await throughputRows(
      peers,
      [1, 8, 32],
      throughput,
      `LangGraph's API server (langgraphjs dev, in memory, the same graph, ${RUNS_AT_ONCE} runs at once)`,
    );
    rows.push(...measured.rows);
    const runs = measured.runs;

    const firstTokens = peers.map((): number[] => []);
    for (let i = 0; i < 15; i++) {
      for (const [index, peer] of peers.entries()) firstTokens[index]!.push(await streamRun(peer.client));
    }
    const [ourFirst, theirFirst] = firstTokens.map(median);
    rows.push({
      benchmark: "This service vs LangGraph's API server: time to first token (median of 15)",
      service: ms(ourFirst!),
      baseline: `${ms(theirFirst!)} LangGraph API server`,
      ratio: `${(theirFirst! / ourFirst!).toFixed(1)}× (LangGraph's / this service's)`,
      target: '',
      met: '',
    });

    const [ourCpu, theirCpu] = peers.map((peer) => peer.cpuMs / runs);
    rows.push({
      benchmark: `This service vs LangGraph's API server: server CPU (user + system) per run over the ${runs} throughput runs`,
      service: `${ms(ourCpu!)} (its process; PostgreSQL's not counted)`,
      baseline: `${ms(theirCpu!)} LangGraph API server (the CLI and its processes)`,
      ratio: `${(theirCpu! / ourCpu!).toFixed(1)}× (LangGraph's / this service's)`,
      target: '',
      met: '',
    });

    const [ourPeak, theirPeak] = await Promise.all(peers.map((peer) => treePeakRssMiB(peer.pid)));
    rows.push({
      benchmark: "This service vs LangGraph's API server: server peak RSS",
      service: `${ourPeak!.toFixed(0)} MiB (since its start, the rows above included)`,
      baseline: `${theirPeak!.toFixed(0)} MiB LangGraph API server (summed over the CLI and its processes)`,
      ratio: `${(theirPeak! / ourPeak!).toFixed(1)}× (LangGraph's / this service's)`,
      target: '',
      met: '',
    });
  } finally {
    await langGraph.stop();
  }

  const shipped = await startLangGraphServer(model.url, generatedDir);
  try {
    const peers: Peer[] = [serviceClientOf(), { client: langGraphClient(shipped.url), pid: shipped.pid, cpuMs: 0 }];
    const measured = await throughputRows(
      peers,
      [8, 32],
      throughput,
      `LangGraph's API server as it ships (its default ${SHIPPED_RUNS_AT_ONCE} runs at once)`,
    );
    rows.push(...measured.rows);
  } finally {
    await shipped.stop();
  }
  return rows;
}
