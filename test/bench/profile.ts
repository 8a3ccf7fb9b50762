/**
 * `npm run profile -- [clients] [runs per client]`: where a short run's time and CPU go, in the server and in
 * PostgreSQL (docs/performance.md). Starts the compiled server on a fresh database of TEST_DATABASE_URL with the
 * stand-in model in a process of its own, makes `clients` × `runs` three-phase runs, and prints:
 *
 * - runs per second and the server process's CPU time per run (/proc);
 * - when the client saw each step of a run (the answer's headers, run_start, node_enter, the first token), medians;
 * - the statements each run sends and the time PostgreSQL spends on them, from PostgreSQL's own log: the database's
 *   log_min_duration_statement is set to 0 for the measurement (this needs a superuser, and PG_LOG_FILE, default
 *   /var/log/postgresql/postgresql-15-main.log, readable);
 * - with PROFILE_TOKENS=n, each phase's answer is n tokens (3 by default): 2000 profiles streaming, as the bench's
 *   streaming rows measure it;
 * - with PROFILE_CPU=1, the server's V8 CPU profile summed by package and by function (self time), written to
 *   test-results/profile/ (open the .cpuprofile in Chrome's DevTools for the whole tree).
 */
import fs from 'node:fs';
import pg from 'pg';
import { readEvents } from '../helpers/sse';
import { startIntegrationFixture } from '../helpers/integration';
import { createDatabase, startDatabaseServer } from '../helpers/postgres';
import { startModelProcess } from '../load/capacity';
import { median } from './bench-table';
import { cpuMs } from './process-usage';
import { profileSummary, scheduling, spawnProfiledServer, writes } from './profile-process';

const clients = Number(process.argv[2] ?? 1);
const perClient = Number(process.argv[3] ?? 50);
const logFile = process.env.PG_LOG_FILE ?? '/var/log/postgresql/postgresql-15-main.log';

const database = await startDatabaseServer();
const fixture = await startIntegrationFixture({ server: false, database: false });
const standIn = await startModelProcess();
await standIn.script(Number(process.env.PROFILE_TOKENS ?? 3), 0);
const db = await createDatabase(database.url, 'svc_profile');
const dbName = new URL(db.url).pathname.slice(1);
const admin = new pg.Client({ connectionString: database.url });
await admin.connect();
// A database setting reaches only connections opened after it: set before the server opens its pool.
await admin.query(`ALTER DATABASE "${dbName}" SET log_min_duration_statement = 0`);
const server = await spawnProfiledServer(
  fixture.env({
    DATABASE_URL: db.url,
    LOCAL_LLM_BASE: standIn.url,
    LOCAL_LLM_MAX_CONCURRENT: '64',
    LOCAL_LLM_MAX_RUNS_PER_USER: '100000',
  }),
);

/** When the client saw each step of a run, in ms from its request: the answer's headers, then each event's first. */
const firsts = new Map<string, number[]>();
let timing = false;
const run = async () => {
  const began = performance.now();
  const seen = new Map<string, number>();
  const res = await server.request('/graphs/summary/run', { method: 'POST', json: { message: 'short' } });
  seen.set('headers', performance.now() - began);
  const events = await readEvents(res, (event) => {
    if (!seen.has(event.data.type)) seen.set(event.data.type, performance.now() - began);
  });
  if (events.at(-1)?.data.type !== 'run_done')
    throw new Error(`run did not complete: ${JSON.stringify(events.at(-1))}`);
  if (!timing) return;
  for (const [step, ms] of seen) {
    if (!firsts.has(step)) firsts.set(step, []);
    firsts.get(step)!.push(ms);
  }
};
for (let i = 0; i < 10; i++) await run(); // what the server loads lazily (the graph, the model client)

const logFrom = fs.statSync(logFile).size;
const cpuBefore = await cpuMs(server.child.pid!);
const ioBefore = writes(server.child.pid!);
const schedBefore = scheduling(server.child.pid!);
const started = performance.now();
timing = true;
await Promise.all(
  Array.from({ length: clients }, async () => {
    for (let i = 0; i < perClient; i++) await run();
  }),
);
const seconds = (performance.now() - started) / 1000;
const runs = clients * perClient;
const cpuPerRun = ((await cpuMs(server.child.pid!)) - cpuBefore) / runs;
const ioAfter = writes(server.child.pid!);
const schedAfter = scheduling(server.child.pid!);
await admin.query(`ALTER DATABASE "${dbName}" RESET log_min_duration_statement`);
await new Promise((resolve) => setTimeout(resolve, 500)); // the last lines reach the log

console.log(
  `${clients} client(s), ${runs} runs: ${(runs / seconds).toFixed(1)} runs/s, server CPU ${cpuPerRun.toFixed(1)} ms per run`,
);
console.log(
  `the server's main thread: ${((schedAfter.runMs - schedBefore.runMs) / runs).toFixed(1)} ms on a CPU and ${((schedAfter.waitMs - schedBefore.waitMs) / runs).toFixed(1)} ms ready but waiting for one, per run`,
);
console.log(
  `the server's writes (sockets included): ${((ioAfter.calls - ioBefore.calls) / runs).toFixed(1)} system calls and ${((ioAfter.bytes - ioBefore.bytes) / runs / 1024).toFixed(1)} KiB per run`,
);
console.log(
  `where the first token waits, as the client sees it (median ms from the request): ${[
    'headers',
    'run_start',
    'node_enter',
    'token',
  ]
    .map((step) => `${step} ${median(firsts.get(step) ?? [NaN]).toFixed(1)}`)
    .join(', ')}`,
);

// PostgreSQL's log: one "duration: … execute …" line per statement of the extended protocol, one "statement" line per
// simple query; parse and bind lines are parts of an execute and not counted apart.
const log = Buffer.alloc(fs.statSync(logFile).size - logFrom);
const fd = fs.openSync(logFile, 'r');
fs.readSync(fd, log, 0, log.length, logFrom);
fs.closeSync(fd);
const statements = new Map<string, { count: number; ms: number }>();
let count = 0;
let totalMs = 0;
for (const line of log.toString().split('\n')) {
  if (!line.includes(`@${dbName} `)) continue;
  const match = /duration: ([\d.]+) ms\s+(?:statement|execute [^:]*): (.*)$/.exec(line);
  if (!match) continue;
  const text = match[2]!.replace(/\s+/g, ' ').slice(0, 100);
  const entry = statements.get(text) ?? { count: 0, ms: 0 };
  entry.count++;
  entry.ms += Number(match[1]);
  statements.set(text, entry);
  count++;
  totalMs += Number(match[1]);
}
console.log(`PostgreSQL: ${(count / runs).toFixed(1)} statements per run, ${(totalMs / runs).toFixed(2)} ms per run`);
console.log('per run   ms/run  statement (its start)');
for (const [text, entry] of [...statements].sort((a, b) => b[1].ms - a[1].ms).slice(0, 20)) {
  console.log(`${(entry.count / runs).toFixed(2).padStart(7)} ${(entry.ms / runs).toFixed(3).padStart(8)}  ${text}`);
}

await server.stop();
await admin.end();
await standIn.stop();
await fixture.close();
await db.drop();
await database.stop();

profileSummary();
