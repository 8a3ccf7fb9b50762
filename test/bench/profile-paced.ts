/**
 * `npm run profile:paced -- [runs] [tokens]`: where the time and the memory of many streaming runs at once go
 * (docs/performance.md). The bench's capacity load on one process: `runs` runs started at once, each of three phases
 * of `tokens` tokens (200 unless given) at 40 tokens a second from the stand-in in a process of its own, beside as many
 * clients reading the stand-in directly. A few tokens a phase leave what a run costs apart from its tokens: its start,
 * its phases and its calls. Prints, for the server process:
 *
 * - run time and first token, p50 / p95, against the direct read;
 * - CPU per run and per token, and how long its main thread waited for a CPU (/proc);
 * - write system calls per token (to PostgreSQL, to the model and to the SSE clients, together) and statements;
 * - the event loop's delay (its p50, p99 and max, from the server's own metrics) every 5 s, and its resident memory,
 *   its heap and the memory outside it (buffers) over time;
 * - with PROFILE_CPU=1, its V8 CPU profile summed by package and by function, as `npm run profile` prints it.
 */
import pg from 'pg';
import { startIntegrationFixture } from '../helpers/integration';
import { createDatabase, startDatabaseServer } from '../helpers/postgres';
import { directCapacity, peakRssMiB, serviceCapacity, startModelProcess, summarise } from '../load/capacity';
import { commandCpuMs, cpuMs, rssMiB } from './process-usage';
import { profileSummary, scheduling, spawnProfiledServer, writes } from './profile-process';

const runs = Number(process.argv[2] ?? 500);
const tokensPerPhase = Number(process.argv[3] ?? 200);
if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(tokensPerPhase) || tokensPerPhase < 1) {
  throw new Error('usage: npm run profile:paced -- [runs] [tokens a phase], both whole numbers from 1');
}
const PHASES = 3;
const metricsToken = 'profile-paced-metrics-token';

const database = await startDatabaseServer();
const fixture = await startIntegrationFixture({ server: false, database: false });
const standIn = await startModelProcess();
const db = await createDatabase(database.url, 'svc_profile_paced');

await standIn.script(tokensPerPhase, 25);
const direct = await directCapacity(standIn.url, runs);

const server = await spawnProfiledServer(
  fixture.env({
    DATABASE_URL: db.url,
    LOCAL_LLM_BASE: standIn.url,
    DEFAULT_MODEL: 'fake-model',
    LOCAL_LLM_MAX_CONCURRENT: '1024',
    LOCAL_LLM_MAX_RUNS_PER_USER: '5000',
    METRICS_TOKEN: metricsToken,
  }),
);
const pid = server.child.pid!;
const statements = async () => {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  const { rows } = await client.query<{ n: string }>(
    `SELECT xact_commit AS n FROM pg_stat_database WHERE datname = current_database()`,
  );
  await client.end();
  return Number(rows[0]!.n);
};

// What the server loads lazily (the graph, the model client), once, at the stand-in's pace.
await serviceCapacity({ urls: [server.url], runs: 2 });

// prom-client's event loop histogram counts from its last scrape: this one starts the measurement.
const scrape = async () =>
  (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })).text();
await scrape();
const cpuBefore = await cpuMs(pid);
const standInBefore = await cpuMs(standIn.child.pid!);
const postgresBefore = await commandCpuMs('postgres');
const ioBefore = writes(pid);
const schedBefore = scheduling(pid);
const commitsBefore = await statements();
const memory: { s: number; mib: number }[] = [];
const started = performance.now();
const sampler = setInterval(() => {
  void rssMiB(pid).then((mib) => memory.push({ s: (performance.now() - started) / 1000, mib }));
}, 1000);
/**
 * The server's own figures about every 5 s: its event loop's delay since the scrape before, its heap and what lies
 * outside it.
 */
const windows: string[] = [];
let scraping = false;
const scraper = setInterval(() => {
  // A busy server may take longer than 5 s to answer: one scrape at a time, each its own window.
  if (scraping) return;
  scraping = true;
  void scrape()
    .then((text) => windows.push(text))
    .finally(() => (scraping = false));
}, 5000);
const clientCpu = process.cpuUsage();
const outcomes = await serviceCapacity({ urls: [server.url], runs });
const clientUsed = process.cpuUsage(clientCpu);
clearInterval(sampler);
clearInterval(scraper);
const seconds = (performance.now() - started) / 1000;
const cpu = (await cpuMs(pid)) - cpuBefore;
const standInCpu = (await cpuMs(standIn.child.pid!)) - standInBefore;
const postgresCpu = (await commandCpuMs('postgres')) - postgresBefore;
const io = writes(pid);
const sched = scheduling(pid);
const commits = (await statements()) - commitsBefore;
const peak = await peakRssMiB(pid);
const metrics = await scrape();

const done = outcomes.filter((o) => o.end === 'run_done');
const tokens = runs * tokensPerPhase * PHASES;
const [total, first] = [summarise(done.map((o) => o.total)), summarise(done.map((o) => o.firstToken))];
const [dTotal, dFirst] = [summarise(direct.map((d) => d.total)), summarise(direct.map((d) => d.firstToken))];
const value = (name: string, text = metrics) =>
  Number(new RegExp(`^${name}(?:\\{[^}]*\\})? ([\\d.e+-]+)$`, 'm').exec(text)?.[1]);
const ms = (name: string, text?: string) => (value(name, text) * 1000).toFixed(0);
const mib = (name: string, text: string) => (value(name, text) / 1024 / 1024).toFixed(0);
const s = (v: number) => `${v.toFixed(2)} s`;

console.log(
  `${runs} runs at once, ${PHASES} phases × ${tokensPerPhase} tokens at 40 tokens/s, ${seconds.toFixed(1)} s in all`,
);
const retried = outcomes.filter((o) => o.data.some((d) => d.includes('"type":"model_retry"'))).length;
console.log(
  `CPU beside the server's: the client (this process) ${((clientUsed.user + clientUsed.system) / 1e6).toFixed(1)} s, ` +
    `the stand-in ${(standInCpu / 1000).toFixed(1)} s, PostgreSQL ${(postgresCpu / 1000).toFixed(1)} s`,
);
console.log(`failed: ${runs - done.length}; runs whose model call was tried again: ${retried}`);
console.log(
  `run p50 / p95: ${s(total.p50)} / ${s(total.p95)} (direct ${s(dTotal.p50)} / ${s(dTotal.p95)}; p50 ${((total.p50 / dTotal.p50) * 100).toFixed(0)}%)`,
);
console.log(
  `the client saw, p50 / p95: ${['headers', 'run_start', 'node_enter', 'token']
    .map((step) => {
      const t = summarise(done.map((o) => o.steps[step] ?? NaN));
      return `${step} ${s(t.p50)} / ${s(t.p95)}`;
    })
    .join(', ')}`,
);
console.log(`first token p50 / p95: ${s(first.p50)} / ${s(first.p95)} (direct ${s(dFirst.p50)} / ${s(dFirst.p95)})`);
console.log(
  `server CPU: ${(cpu / 1000).toFixed(1)} s, ${(cpu / runs).toFixed(1)} ms per run, ${((cpu / tokens) * 1000).toFixed(1)} µs per token; ${((cpu / 1000 / seconds) * 100).toFixed(0)}% of one core`,
);
console.log(
  `its main thread: ${((sched.runMs - schedBefore.runMs) / 1000).toFixed(1)} s on a CPU, ${((sched.waitMs - schedBefore.waitMs) / 1000).toFixed(1)} s ready but waiting for one`,
);
console.log(
  `its writes (sockets included): ${((io.calls - ioBefore.calls) / tokens).toFixed(2)} system calls and ${((io.bytes - ioBefore.bytes) / tokens).toFixed(0)} bytes per token; PostgreSQL: ${(commits / runs).toFixed(1)} transactions per run`,
);
console.log(
  `event loop delay, each 5 s (p50 / p99 / max, ms): ${[...windows, metrics]
    .map((w) => ['p50', 'p99', 'max'].map((q) => ms(`nodejs_eventloop_lag_${q}_seconds`, w)).join(' / '))
    .join(', ')}`,
);
console.log(
  `its heap, each 5 s (used / total / outside it, MiB): ${windows
    .map((w) =>
      ['nodejs_heap_size_used_bytes', 'nodejs_heap_size_total_bytes', 'nodejs_external_memory_bytes']
        .map((name) => mib(name, w))
        .join(' / '),
    )
    .join(', ')}`,
);
console.log(
  `events published and not yet stored, each 5 s: ${windows.map((w) => value('svc_run_events_unstored', w)).join(', ')}`,
);
console.log(
  `resident memory: peak ${peak.toFixed(0)} MiB; each second: ${memory.map((m) => m.mib.toFixed(0)).join(' ')}`,
);

await server.stop();
await standIn.stop();
await fixture.close();
await db.drop();
await database.stop();

profileSummary();
