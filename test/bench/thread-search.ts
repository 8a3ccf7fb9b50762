/**
 * Thread search on a year's history (GET /threads?q=, docs/http-api.md#searching-threads): 100,000 threads, each with a
 * run whose message and output are eighty words, searched through the server for a word one thread holds and for one
 * a few hundred hold, beside the unfiltered first page of the list in the same sitting.
 */
import pg from 'pg';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { createDatabase } from '../helpers/postgres';
import type { ServerProcess } from '../helpers/process';
import { median, ms, percentile, type BenchRow } from './bench-table';

const THREADS = 100_000;
const SAMPLES = 60;

/** Fills the database with THREADS threads of one run each; one run's output holds the word `needle`. */
async function seed(url: string, needle: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    // In batches, so that no statement holds too much at once; the words are w0 … w19999, eighty per output.
    for (let from = 1; from <= THREADS; from += 10_000) {
      await client.query(
        `WITH t AS (
           INSERT INTO svc_threads (id, agent, model, last_message, project_id, updated_at)
           SELECT gen_random_uuid(), 'summary', 'fake-model', 'Question ' || g, $1, now() - make_interval(secs => g)
             FROM generate_series($2::int, $3::int) g
           RETURNING id, last_message
         )
         INSERT INTO svc_runs (id, thread_id, agent, model, status, message, output, event_seq)
         SELECT gen_random_uuid(), t.id, 'summary', 'fake-model', 'completed', t.last_message,
                (SELECT string_agg('w' || floor(random() * 20000)::int, ' ') FROM generate_series(1, 80)
                  WHERE t.id IS NOT NULL),
                0
           FROM t`,
        [DEFAULT_PROJECT_ID, from, Math.min(THREADS, from + 9_999)],
      );
    }
    await client.query(
      `UPDATE svc_runs SET output = output || ' ' || $1
        WHERE id = (SELECT id FROM svc_runs ORDER BY started_at, id LIMIT 1 OFFSET 50000)`,
      [needle],
    );
    await client.query('VACUUM ANALYZE svc_threads');
    await client.query('VACUUM ANALYZE svc_runs');
  } finally {
    await client.end();
  }
}

/** Each request's time, in ms, after a few unmeasured ones. */
async function timed(server: ServerProcess, path: string, check: (ids: string[]) => void): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < SAMPLES + 5; i++) {
    const started = performance.now();
    const res = await server.request(path);
    const body = (await res.json()) as { items: { id: string }[] };
    const took = performance.now() - started;
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
    check(body.items.map((t) => t.id));
    if (i >= 5) times.push(took);
  }
  return times;
}

export async function threadSearchRows(
  databaseServer: string,
  spawn: (env: Record<string, string>) => Promise<ServerProcess>,
  env: Record<string, string>,
): Promise<BenchRow[]> {
  const db = await createDatabase(databaseServer, 'svc_bench');
  const server = await spawn({ ...env, DATABASE_URL: db.url });
  try {
    const needle = 'quokka';
    await seed(db.url, needle);
    const list = await timed(server, '/threads?limit=50', (ids) => {
      if (ids.length !== 50) throw new Error('the list is short');
    });
    const rare = await timed(server, `/threads?limit=50&q=${needle}`, (ids) => {
      if (ids.length !== 1) throw new Error(`the search for "${needle}" found ${ids.length} threads, not 1`);
    });
    // w4242 is in about 0.4% of outputs: a few hundred threads, newest first.
    const common = await timed(server, '/threads?limit=50&q=w4242', (ids) => {
      if (ids.length === 0) throw new Error('the search for w4242 found nothing');
    });
    const cell = (values: number[]) => `${ms(median(values))} / ${ms(percentile(values, 95))}`;
    const baseline = `${ms(median(list))} / ${ms(percentile(list, 95))} (first page, no search)`;
    return [
      {
        benchmark: `Thread search among ${THREADS.toLocaleString('en')} threads: a word of one output (median / p95)`,
        service: cell(rare),
        baseline,
        ratio: `${(percentile(rare, 95) / percentile(list, 95)).toFixed(2)}× (p95)`,
        target: 'p95 < 100 ms',
        met: percentile(rare, 95) < 100 ? 'yes' : 'no',
      },
      {
        benchmark: `Thread search among ${THREADS.toLocaleString('en')} threads: a word of ~400 outputs, first page (median / p95)`,
        service: cell(common),
        baseline,
        ratio: `${(percentile(common, 95) / percentile(list, 95)).toFixed(2)}× (p95)`,
        target: '',
        met: '',
      },
    ];
  } finally {
    await server.stop();
    await db.drop();
  }
}
