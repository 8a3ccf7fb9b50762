/**
 * `npm run bench`: what the service costs on top of the model and the database, as ratios measured
 * in the same run on the same machine. Prints a markdown table (and writes test-results/bench.md).
 *
 * The server runs as its own process (as in production); the fake model runtime and the clients run
 * here. PostgreSQL: TEST_DATABASE_URL (a fresh database is created on it) or an embedded one.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import { loadCatalog } from '../../src-server/assets/catalog';
import { compileGraph, executionConfig, initialState } from '../../src-server/engine';
import { loadConfig } from '../../src-server/config';
import { createModelProviders } from '../../src-server/models/model-providers';
import { DataDirInUseError, lockDataDir } from '../../src-server/db/instance-lock';
import { startIntegrationFixture } from '../helpers/integration';
import { freePort } from '../helpers/ports';
import { startNginx } from '../helpers/nginx';
import { createDatabase, startDatabaseServer } from '../helpers/postgres';
import { compiledLaunch, spawnServer, type ServerProcess } from '../helpers/process';

/** The server as users run it (npm start): compiled, not through a TypeScript loader. */
const spawnCompiled = (env: Record<string, string>) => spawnServer(env, 60_000, [], compiledLaunch());
import { followAccepted, readEvents, readPieces } from '../helpers/sse';
import { STUDIO_TOKENS_PER_PHASE, studioFollowBench, studioFollowRow } from './studio-follow';
import { langGraphServerRows } from './langgraph-server/peer';
import { benchExecution, median, ms, noQueue, percentile, quietHooks, type BenchRow } from './bench-table';
import { cpuMs } from './process-usage';
import { stalledReadersRow } from './stalled-readers';
import { threadSearchRows } from './thread-search';
import { rateLimitCostRow } from './rate-limit-cost';
import {
  directCapacity,
  peakRssMiB,
  serviceCapacity,
  startModelProcess,
  summarise,
  type RunOutcome,
} from '../load/capacity';

const rows: BenchRow[] = [];

/** Reads a stream line by line and JSON-parses each payload line: the same work for both clients. */
function readLines(res: Response, onPayload: (payload: string) => boolean): Promise<void> {
  return readPieces(res, '\n', (line) => line !== '' && onPayload(line));
}

interface StreamTiming {
  tokens: number;
  /** Tokens per second over the whole request, setup included. */
  tps: number;
  /** Tokens per second while a node (a completion) streams, from its first token to its last: moving tokens. */
  streamingTps: number;
  ttft: number;
}

/** Collects, per node, the first and last token times. */
class Spans {
  private readonly spans = new Map<string, { first: number; last: number; tokens: number }>();
  token(node: string): void {
    const now = performance.now();
    const span = this.spans.get(node) ?? { first: now, last: now, tokens: 0 };
    span.last = now;
    span.tokens++;
    this.spans.set(node, span);
  }
  rate(): number {
    let tokens = 0;
    let ms = 0;
    for (const span of this.spans.values()) {
      tokens += span.tokens - 1;
      ms += span.last - span.first;
    }
    return tokens / (ms / 1000);
  }
}

/** The baseline: the same three 2,000-token completions read straight from the runtime, one after another. */
async function directStream(modelUrl: string): Promise<StreamTiming> {
  const started = performance.now();
  let tokens = 0;
  let first = 0;
  const spans = new Spans();
  for (let node = 0; node < 3; node++) {
    const res = await fetch(`${modelUrl}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fake-model', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    await readLines(res, (line) => {
      const chunk = JSON.parse(line) as { done: boolean; message: { content: string } };
      if (!chunk.done && chunk.message.content) {
        tokens++;
        spans.token(String(node));
        first ||= performance.now();
      }
      return false;
    });
  }
  return {
    tokens,
    tps: tokens / ((performance.now() - started) / 1000),
    streamingTps: spans.rate(),
    ttft: first - started,
  };
}

async function serviceStream(server: ServerProcess): Promise<StreamTiming> {
  const started = performance.now();
  const res = await server.request('/graphs/summary/run', { method: 'POST', json: { message: 'stream' } });
  let tokens = 0;
  let first = 0;
  let event = '';
  const spans = new Spans();
  await readLines(res, (line) => {
    if (line.startsWith('event: ')) event = line.slice(7);
    if (!line.startsWith('data: ')) return false;
    const data = JSON.parse(line.slice(6)) as { text?: string; node?: string };
    if (event === 'token' && data.text) {
      tokens++;
      spans.token(data.node ?? '');
      first ||= performance.now();
    }
    return event === 'run_done' || event === 'run_error';
  });
  return {
    tokens,
    tps: tokens / ((performance.now() - started) / 1000),
    streamingTps: spans.rate(),
    ttft: first - started,
  };
}

async function main() {
  const database = await startDatabaseServer();
  const db = await createDatabase(database.url, 'svc_bench');
  // The tests' fixture, on the bench's own database: the fake model runtime and the fixture catalog.
  const fixture = await startIntegrationFixture({ server: false, database: false });
  const { model, generatedDir: generated } = fixture;
  // One user stands for many clients here: the per-user cap of the local runtime is lifted. Answers may be as long
  // as the studio row streams (STUDIO_TOKENS_PER_PHASE), past the default cap of 2,048 answer tokens.
  const env = fixture.env({
    DATABASE_URL: db.url,
    LOCAL_LLM_MAX_CONCURRENT: '64',
    LOCAL_LLM_MAX_RUNS_PER_USER: '1000',
    LOCAL_LLM_MAX_ANSWER_TOKENS: String(STUDIO_TOKENS_PER_PHASE),
  });
  const server = await spawnCompiled(env);

  try {
    // Streaming overhead: three nodes of 2,000 tokens each, as fast as the fake can send them.
    model.reply(Array.from({ length: 2000 }, (_, i) => `t${i} `));
    await serviceStream(server);
    await directStream(model.url);
    const service: StreamTiming[] = [];
    const direct: StreamTiming[] = [];
    for (let i = 0; i < 7; i++) {
      service.push(await serviceStream(server));
      direct.push(await directStream(model.url));
    }
    const serviceRate = median(service.map((s) => s.streamingTps));
    const directRate = median(direct.map((d) => d.streamingTps));
    rows.push({
      benchmark: 'Streaming: tokens/s seen by an SSE client while a node streams (3 nodes × 2,000 tokens)',
      service: serviceRate.toFixed(0),
      baseline: `${directRate.toFixed(0)} (the same completions read from the runtime directly)`,
      ratio: `${((serviceRate / directRate) * 100).toFixed(0)}%`,
      target: '≥ 90%',
      met: serviceRate / directRate >= 0.9 ? 'yes' : 'no',
    });
    const serviceTps = median(service.map((s) => s.tps));
    const directTps = median(direct.map((d) => d.tps));
    rows.push({
      benchmark: 'Streaming: tokens/s over the whole run (setup and node transitions included)',
      service: serviceTps.toFixed(0),
      baseline: directTps.toFixed(0),
      ratio: `${((serviceTps / directTps) * 100).toFixed(0)}%`,
      target: '',
      met: '',
    });
    const added = median(service.map((s) => s.ttft)) - median(direct.map((d) => d.ttft));
    rows.push({
      benchmark: 'Streaming: time to first token (median)',
      service: ms(median(service.map((s) => s.ttft))),
      baseline: ms(median(direct.map((d) => d.ttft))),
      ratio: `+${ms(added)}`,
      target: '< 20 ms added',
      met: added < 20 ? 'yes' : 'no',
    });

    // Throughput: short runs through the API against in-process LangGraph on the same checkpointer. The stand-in runs
    // in a process of its own here, so that each side's CPU per run is its own: the server process's, and this
    // process's while it runs LangGraph in process.
    const standIn = await startModelProcess();
    await standIn.script(3, 0);
    const shortServer = await spawnCompiled({ ...env, LOCAL_LLM_BASE: standIn.url });
    const inProcess = await inProcessRunner(db.url, standIn.url, generated);
    const shortRun = async () => {
      const events = await readEvents(
        await shortServer.request('/graphs/summary/run', { method: 'POST', json: { message: 'short' } }),
      );
      if (events.at(-1)?.data.type !== 'run_done')
        throw new Error(`run did not complete: ${JSON.stringify(events.at(-1)?.data)}`);
    };
    // Both sides warm up first: the server just started (what it loads lazily, what V8 compiles as it goes).
    for (let i = 0; i < 20; i++) {
      await shortRun();
      await inProcess.run();
    }
    const cpuPerRun: { clients: number; service: number; inProcess: number }[] = [];
    for (const clients of [1, 8, 32]) {
      const serverCpu = await cpuMs(shortServer.child.pid!);
      const viaApi = await throughput(clients, 6, shortRun);
      const service = ((await cpuMs(shortServer.child.pid!)) - serverCpu) / (clients * 6);
      const ownCpu = process.cpuUsage();
      const direct = await throughput(clients, 6, inProcess.run);
      const own = process.cpuUsage(ownCpu);
      cpuPerRun.push({ clients, service, inProcess: (own.user + own.system) / 1000 / (clients * 6) });
      rows.push({
        benchmark: `Throughput: 3-node runs, ${clients} concurrent client${clients > 1 ? 's' : ''} (p50 / p95 latency)`,
        service: `${viaApi.rps.toFixed(1)} runs/s (${ms(viaApi.p50)} / ${ms(viaApi.p95)})`,
        baseline: `${direct.rps.toFixed(1)} runs/s (${ms(direct.p50)} / ${ms(direct.p95)}) in-process`,
        ratio: `${((viaApi.rps / direct.rps) * 100).toFixed(0)}%`,
        target: clients > 1 ? '≥ 100%' : '≥ 70%',
        met: viaApi.rps / direct.rps >= (clients > 1 ? 1 : 0.7) ? 'yes' : 'no',
      });
    }
    for (const cpu of cpuPerRun) {
      rows.push({
        benchmark: `Throughput: CPU per run at ${cpu.clients} client${cpu.clients > 1 ? 's' : ''} (the server process; in-process: this process running LangGraph)`,
        service: ms(cpu.service),
        baseline: `${ms(cpu.inProcess)} in-process`,
        ratio: `${((cpu.service / cpu.inProcess) * 100).toFixed(0)}%`,
        target: '≤ 100%',
        met: cpu.service <= cpu.inProcess ? 'yes' : 'no',
      });
    }
    const inProcessTtft: number[] = [];
    const serviceTtft: number[] = [];
    for (let i = 0; i < 15; i++) {
      inProcessTtft.push(await inProcess.firstToken('first token'));
      serviceTtft.push((await serviceStream(shortServer)).ttft);
    }
    await shortServer.stop();
    await standIn.stop();
    const overInProcess = median(serviceTtft) - median(inProcessTtft);
    rows.push({
      benchmark: 'Streaming: time to first token against in-process LangGraph on the same checkpointer (median)',
      service: ms(median(serviceTtft)),
      baseline: `${ms(median(inProcessTtft))} in-process`,
      ratio: `+${ms(overInProcess)}`,
      target: '≤ +5 ms',
      met: overInProcess <= 5 ? 'yes' : 'no',
    });
    await inProcess.close();
    // LangGraph's own API server on the same graph and stand-in, beside this service (langgraph-server/peer.ts).
    rows.push(...(await langGraphServerRows({ service: server, model, generatedDir: generated, throughput })));

    // Cluster: a client on another process follows a run live; how far behind the executing process's own client?
    const other = await spawnCompiled(env);
    try {
      model.reply(
        Array.from({ length: 100 }, (_, i) => `f${i} `),
        5,
      );
      const lag: number[] = [];
      for (let i = 0; i < 5; i++) {
        const onA = new Map<number, number>();
        let runId = '';
        const started = await server.request('/graphs/summary/run', { method: 'POST', json: { message: 'follow' } });
        let resolveRun!: () => void;
        const known = new Promise<void>((resolve) => (resolveRun = resolve));
        const readingA = readEvents(started, (e) => {
          onA.set(e.id, performance.now());
          if (e.data.type === 'run_start') {
            runId = e.data.run_id;
            resolveRun();
          }
        });
        await known;
        await readEvents(await other.request(`/runs/${runId}/stream`), (e) => {
          const seenOnA = onA.get(e.id);
          if (seenOnA && e.data.type === 'token') lag.push(performance.now() - seenOnA);
        });
        await readingA;
      }
      rows.push({
        benchmark: "Cluster: a follower on another process, behind the executing process's own client (p50 / p95)",
        service: `${ms(median(lag))} / ${ms(percentile(lag, 95))}`,
        baseline: '',
        ratio: '',
        target: 'small',
        met: '',
      });

      // Takeover: the executing process is killed; how long until another resumes the run (default lease)?
      const victim = await spawnCompiled({ ...env, RUN_LEASE_S: '' });
      model.reply(
        Array.from({ length: 400 }, (_, i) => `k${i} `),
        20,
      );
      let runId = '';
      let lastId = 0;
      await readEvents(
        await victim.request('/graphs/summary/run', { method: 'POST', json: { message: 'crash' } }),
        (e) => {
          lastId = e.id;
          if (e.data.type === 'run_start') runId = e.data.run_id;
          return e.data.type === 'token';
        },
      );
      const killed = performance.now();
      victim.child.kill('SIGKILL');
      await victim.exited;
      let resumedAfter = 0;
      await readEvents(
        await other.request(`/runs/${runId}/stream`, { headers: { 'last-event-id': String(lastId) } }),
        (e) => {
          if (e.data.type === 'run_resumed') resumedAfter = performance.now() - killed;
          return e.data.type === 'run_resumed';
        },
      );
      rows.push({
        benchmark: 'Cluster: kill -9 of the executing process → its run resumed on another (default 20 s lease)',
        service: `${(resumedAfter / 1000).toFixed(1)} s`,
        baseline: '',
        ratio: '',
        target: '≈ 30 s or less',
        met: resumedAfter > 0 && resumedAfter < 30_000 ? 'yes' : 'no',
      });
      model.reply(['a', 'b', 'c']);
    } finally {
      await other.stop();
    }

    // Gate latency: from the approve request to the first resumed event.
    model.reply(['ok']);
    const gate: number[] = [];
    for (let i = 0; i < 30; i++) {
      const events = await readEvents(
        await server.request('/graphs/review/run', { method: 'POST', json: { message: 'gate' } }),
      );
      const threadId = (events[0]!.data as { thread_id: string }).thread_id;
      const started = performance.now();
      // The decision answers where to follow the run from; the latency counts both requests, as a client makes them.
      const res = await followAccepted(
        await server.request(`/threads/${threadId}/gates/gate/approve`, { method: 'POST', json: {} }),
        (path) => server.request(path),
      );
      let first = 0;
      await readEvents(res, () => {
        first ||= performance.now();
      });
      gate.push(first - started);
    }
    rows.push({
      benchmark: 'Gate latency: approve → first resumed event (median / p95)',
      service: `${ms(median(gate))} / ${ms(percentile(gate, 95))}`,
      baseline: '',
      ratio: '',
      target: '',
      met: '',
    });

    // The studio in Chromium following a run at the stand-in's full speed: frames, lag, last token on screen.
    rows.push(studioFollowRow(await studioFollowBench(server.url, model)));
    rows.push(await stalledReadersRow(server, model));
  } finally {
    await server.stop();
  }

  // Search on a year's history: 100,000 threads.
  rows.push(...(await threadSearchRows(database.url, spawnCompiled, env)));
  rows.push(await rateLimitCostRow(database.url, spawnCompiled, env));

  // Concurrency: 500 runs at once against one local-runtime slot.
  {
    const concurrencyDb = await createDatabase(database.url, 'svc_bench');
    const single = await spawnCompiled({
      ...env,
      DATABASE_URL: concurrencyDb.url,
      LOCAL_LLM_MAX_CONCURRENT: '1',
      LOCAL_LLM_QUEUE_TIMEOUT_S: '20',
      LOG_LEVEL: 'DEBUG',
    });
    model.reply(['x', 'y']);
    const outcomes = await Promise.all(
      Array.from({ length: 500 }, async (_, i) => {
        const res = await single.request('/graphs/summary/run', {
          method: 'POST',
          json: { message: `run-${String(i).padStart(3, '0')}` },
        });
        let last = '';
        let detail = '';
        await readLines(res, (line) => {
          if (line.startsWith('event: ')) last = line.slice(7);
          if (line.startsWith('data: ') && last === 'run_error')
            detail = (JSON.parse(line.slice(6)) as { error_detail: string }).error_detail;
          return false;
        });
        return { last, detail };
      }),
    );
    const done = outcomes.filter((o) => o.last === 'run_done').length;
    const timedOut = outcomes.filter(
      (o) =>
        o.last === 'run_error' &&
        /^TimeoutError: local runtime queue timeout after 20s \(\d+ still waiting, 1 active\)$/.test(o.detail),
    ).length;
    // First come, first served: calls got their slot in the order of their tickets (from the server's debug log).
    const lines = single.output().split('\n');
    const tickets = new Map(
      lines.flatMap((l) => {
        const match = /queue: (run \S+ node \w+) waits \(ticket (\d+)\)/.exec(l);
        return match ? [[match[1]!, Number(match[2])] as const] : [];
      }),
    );
    const waited = [...tickets.keys()];
    const grantOrder = lines.flatMap((l) => /queue: (run \S+ node \w+) got a slot/.exec(l)?.[1] ?? []);
    const grantedTickets = grantOrder.map((label) => tickets.get(label) ?? 0);
    const fifo = waited.length > 0 && grantedTickets.every((t, i) => i === 0 || t > grantedTickets[i - 1]!);
    const peak = (await peakRssMiB(single.child.pid!)).toFixed(0);
    await single.stop();
    await concurrencyDb.drop();
    rows.push({
      benchmark: 'Concurrency: 500 runs at once, one local-runtime slot, 20 s queue timeout',
      service: `${done} completed, ${timedOut} timed out with the exact message, ${500 - done - timedOut} other; ${waited.length} calls waited, served first come first served: ${fifo ? 'yes' : 'no'}; server peak RSS ${peak} MiB`,
      baseline: '',
      ratio: '',
      target: 'every run completes or times out; FIFO; peak RSS < 300 MiB',
      met: done + timedOut === 500 && fifo && Number(peak) < 300 ? 'yes' : 'no',
    });
  }

  // Capacity: N runs at once at a real model's pace, beside the stand-in read directly by N clients at once.
  for (const processes of [1, 3]) {
    for (const runs of [500, 1000]) {
      // A row that cannot be measured (the machine out of sockets, say) says why, and the others still come.
      rows.push(
        await capacityRow(database.url, generated, runs, processes).catch((error: Error) => ({
          benchmark: `Capacity: ${runs} runs at once, ${processes === 1 ? 'one process' : `${processes} processes`}`,
          service: `not measured: ${error.message}${error.cause ? ` (${String(error.cause)})` : ''}`,
          baseline: '',
          ratio: '',
          target: '0 failed',
          met: 'no',
        })),
      );
    }
  }

  // Start-up: process start to a healthy /health.
  const external = await startupTime({ ...env });
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-bench-embedded-'));
  await fs.chmod(dataDir, 0o755);
  const embeddedEnv = { ...env, DATABASE_URL: '', DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(await freePort()) };
  await startupTime(embeddedEnv); // first start initialises the data folder
  const embedded = await startupTime(embeddedEnv);
  rows.push({
    benchmark: 'Start-up to healthy /health, DATABASE_URL',
    service: ms(external),
    baseline: '',
    ratio: '',
    target: '',
    met: '',
  });
  rows.push({
    benchmark: 'Start-up to healthy /health, embedded PostgreSQL (existing data)',
    service: ms(embedded),
    baseline: '',
    ratio: '',
    target: '',
    met: '',
  });
  // `npm start` as a user types it, a second time: the build check finds nothing to do, the compiled server starts.
  await npmStartTime(embeddedEnv, dataDir); // the first builds whatever changed
  const secondStart = await npmStartTime(embeddedEnv, dataDir);
  rows.push({
    benchmark: '`npm start` to healthy /health, second start (nothing to build, embedded, existing data)',
    service: ms(secondStart),
    baseline: '',
    ratio: '',
    target: '< 3 s',
    met: secondStart < 3000 ? 'yes' : 'no',
  });
  await fs.rm(dataDir, { recursive: true, force: true });

  await fixture.close();
  await db.drop();
  await database.stop();

  const header = `Measured ${new Date().toISOString().slice(0, 10)} on ${os.cpus().length} × ${os.cpus()[0]?.model.trim()}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}.\n\n`;
  const table = [
    '| benchmark | service | baseline | ratio | target | met |',
    '|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.benchmark} | ${r.service} | ${r.baseline} | ${r.ratio} | ${r.target} | ${r.met} |`),
  ].join('\n');
  process.stdout.write(`\n${header}${table}\n`);
  await fs.mkdir('test-results', { recursive: true });
  await fs.writeFile('test-results/bench.md', `${header}${table}\n`);
}

/**
 * N runs started at once through the service (the local runtime's queue and the per-user limit lifted), each of three
 * phases of 200 tokens at 40 tokens a second from a stand-in in a process of its own, beside N clients reading the
 * same stand-in directly, three calls each: the physical limit of this machine for that load. With several
 * processes, they share the database behind nginx.
 */
async function capacityRow(serverUrl: string, generated: string, runs: number, processes: number): Promise<BenchRow> {
  const model = await startModelProcess();
  const db = await createDatabase(serverUrl, 'svc_bench');
  try {
    await model.script(200, 25);
    const direct = await directCapacity(model.url, runs);
    const servers = await Promise.all(
      Array.from({ length: processes }, () =>
        spawnCompiled({
          DATABASE_URL: db.url,
          LOCAL_LLM_BASE: model.url,
          DEFAULT_MODEL: 'fake-model',
          GENERATED_DIR: generated,
          LOCAL_LLM_MAX_CONCURRENT: '1024',
          LOCAL_LLM_MAX_RUNS_PER_USER: '5000',
        }),
      ),
    );
    const nginx = processes > 1 ? await startNginx(servers.map((s) => s.url)) : undefined;
    let outcomes: RunOutcome[];
    let peak: number;
    try {
      outcomes = await serviceCapacity({ urls: [nginx?.url ?? servers[0]!.url], runs });
      peak = Math.max(...(await Promise.all(servers.map((s) => peakRssMiB(s.child.pid!)))));
    } finally {
      await nginx?.stop();
      await Promise.all(servers.map((s) => s.stop()));
    }
    const done = outcomes.filter((o) => o.end === 'run_done');
    const s = (values: number[]) => summarise(values);
    const [total, first] = [s(done.map((o) => o.total)), s(done.map((o) => o.firstToken))];
    const [directTotal, directFirst] = [s(direct.map((d) => d.total)), s(direct.map((d) => d.firstToken))];
    const sec = (v: number) => `${v.toFixed(1)} s`;
    return {
      benchmark: `Capacity: ${runs} runs at once, ${processes === 1 ? 'one process' : `${processes} processes behind nginx`}, 3 phases × 200 tokens at 40 tokens/s (run p50 / p95; first token p50 / p95)`,
      service: `${failures(outcomes)}; ${sec(total.p50)} / ${sec(total.p95)}; ${sec(first.p50)} / ${sec(first.p95)}; peak RSS ${peak.toFixed(0)} MiB${processes > 1 ? ' (largest process)' : ''}`,
      baseline: `${sec(directTotal.p50)} / ${sec(directTotal.p95)}; ${sec(directFirst.p50)} / ${sec(directFirst.p95)} (the stand-in read directly by ${runs} clients)`,
      ratio: `${((total.p50 / directTotal.p50) * 100).toFixed(0)}% of the direct run time (p50)`,
      target: '0 failed',
      met: done.length === outcomes.length ? 'yes' : 'no',
    };
  } finally {
    await model.stop();
    await db.drop();
  }
}

/** How many runs did not complete, and how each kind ended: the event or status, and its detail's start. */
function failures(outcomes: RunOutcome[]): string {
  const kinds = new Map<string, number>();
  for (const o of outcomes) {
    if (o.end === 'run_done') continue;
    const kind = `${o.end || 'no end'}${o.errorDetail ? `: ${o.errorDetail.slice(0, 80).replace(/\|/g, '/')}` : ''}`;
    kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
  }
  const failed = [...kinds.values()].reduce((a, n) => a + n, 0);
  if (failed === 0) return '0 failed';
  return `${failed} failed (${[...kinds].map(([kind, n]) => `${n} × ${kind}`).join('; ')})`;
}

async function throughput(clients: number, runsPerClient: number, once: () => Promise<void>) {
  const latencies: number[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      for (let i = 0; i < runsPerClient; i++) {
        const t = performance.now();
        await once();
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { rps: latencies.length / seconds, p50: percentile(latencies, 50), p95: percentile(latencies, 95) };
}

/** The same graph on the same PostgreSQL checkpointer, run in this process without the service. */
async function inProcessRunner(databaseUrl: string, modelUrl: string, generated: string) {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
  const checkpointer = new PostgresSaver(pool, undefined, { schema: 'graph_checkpoints' });
  const entry = loadCatalog(generated).get('summary')!;
  const models = createModelProviders(loadConfig({ LOCAL_LLM_BASE: modelUrl }), noQueue);
  let firstToken = 0;
  const hooks = quietHooks(() => {
    firstToken ||= performance.now();
  });
  // Compiled once, as an application that uses LangGraph in process would (and as the service does).
  const graph = compileGraph(entry, checkpointer);
  const execution = benchExecution('in-process', models, hooks);
  /** One run of the summary graph, ready: calling it streams the run to its end. */
  const prepareRun = (message: string) => {
    const threadId = crypto.randomUUID();
    return async () => {
      for await (const _ of await graph.stream(initialState(threadId, message, ''), {
        ...executionConfig(threadId, execution),
        streamMode: 'updates',
      })) {
        // drain
      }
    };
  };
  return {
    run: () => prepareRun('short')(),
    /** Time to the first token of one run, in-process: LangGraph and the checkpointer, no HTTP, no service. */
    firstToken: async (message: string) => {
      const run = prepareRun(message);
      firstToken = 0;
      const started = performance.now();
      await run();
      return firstToken - started;
    },
    close: () => pool.end(),
  };
}

async function startupTime(env: Record<string, string>): Promise<number> {
  const started = performance.now();
  const server = await spawnCompiled(env);
  for (;;) {
    const res = await fetch(`${server.url}/health`).catch(() => undefined);
    if (res?.status === 200) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  const elapsed = performance.now() - started;
  await server.stop();
  return elapsed;
}

/** `npm start` to a healthy /health; then its process group is stopped and the data folder is free again. */
async function npmStartTime(env: Record<string, string>, dataDir: string): Promise<number> {
  const started = performance.now();
  const child = spawn('npm', ['start'], {
    cwd: path.resolve(import.meta.dirname, '..', '..'),
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: '0', AUTH_ENABLED: 'false', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  let url: string | undefined;
  for (;;) {
    url ??= /listening on (http:\/\/[\d.]+:\d+)/.exec(output)?.[1];
    if (child.exitCode !== null) throw new Error(`npm start exited:\n${output}`);
    const res = url ? await fetch(`${url}/health`).catch(() => undefined) : undefined;
    if (res?.status === 200) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  const elapsed = performance.now() - started;
  process.kill(-child.pid!, 'SIGTERM');
  // npm and its shell go at once; the server is gone when the data folder's lock can be taken.
  for (;;) {
    const lock = await lockDataDir(dataDir).catch((error: unknown) => {
      if (error instanceof DataDirInUseError) return undefined;
      throw error;
    });
    if (lock) return lock.release().then(() => elapsed);
    await new Promise((r) => setTimeout(r, 50));
  }
}

await main();
