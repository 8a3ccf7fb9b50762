import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunAccepted, RunDetail, Thread, ThreadPage } from '../../src-server/contracts/runs';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { RUN_SEARCH_DOCUMENT, THREAD_SEARCH_DOCUMENT } from '../../src-server/db/migrations/0016-thread-search';
import { createPool, type Pool } from '../../src-server/db/pool';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { addUser, signSession } from '../helpers/sessions';
import { until } from '../helpers/until';

/**
 * Thread search (GET /threads?q=…, docs/http-api.md#searching-threads) on a real server and PostgreSQL: words of a
 * run's output or message, or of a thread's name, with the other filters and paging, and never another tenant's thread.
 */
const SECRET = 'a-session-secret-for-the-search-tests-0123456';
const ctx = useIntegrationServer({ server: false });
let server: TestServer;
let pool: Pool;
let ann: string;
let mallory: string;
let annId: string;
let otherProject: string;

beforeAll(async () => {
  server = await ctx.start({ AUTH_ENABLED: 'true', SESSION_SECRET: SECRET });
  pool = createPool(ctx.db.url, 2);
  annId = await addUser(pool, 'Ann', [['project', DEFAULT_PROJECT_ID, 'member']]);
  const [org, team] = [randomUUID(), randomUUID()];
  otherProject = randomUUID();
  await pool.query(`INSERT INTO svc_orgs (id, name) VALUES ($1, 'Other org')`, [org]);
  await pool.query(`INSERT INTO svc_teams (id, org_id, name) VALUES ($1, $2, 'Other team')`, [team, org]);
  await pool.query(`INSERT INTO svc_projects (id, team_id, name) VALUES ($1, $2, 'Other project')`, [
    otherProject,
    team,
  ]);
  const malloryId = await addUser(pool, 'Mallory', [['project', otherProject, 'member']]);
  [ann, mallory] = await Promise.all([signSession(annId, SECRET, '1h', 'Ann'), signSession(malloryId, SECRET, '1h')]);
});
afterAll(async () => {
  await server?.close();
  await pool?.end();
});

const as = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

async function json<T>(response: Response, status: number): Promise<T> {
  const body = await response.text();
  expect(response.status, body).toBe(status);
  return JSON.parse(body) as T;
}

/** A finished summary run of `token`'s whose output is `words`, in her only project. */
async function summary(token: string, message: string, words: string): Promise<Thread> {
  ctx.model.reply([words]);
  const started = await json<RunAccepted>(
    await server.request('/agents/summary/runs', { method: 'POST', json: { message }, ...as(token) }),
    202,
  );
  await until(async () => {
    const run = await json<RunDetail>(await server.request(`/runs/${started.run_id}`, as(token)), 200);
    return run.status === 'completed' ? run : undefined;
  });
  return json<Thread>(await server.request(`/threads/${started.thread_id}`, as(token)), 200);
}

const search = async (token: string, query: string) =>
  (await json<ThreadPage>(await server.request(`/threads?${query}`, as(token)), 200)).items.map((t) => t.id);

describe('thread search', () => {
  it('finds threads by a word of an output, a message or a name, and never another tenant’s', async () => {
    const timeout = await summary(ann, 'Why does the nightly import fail?', 'The importer hit a Timeout in pgbouncer.');
    const retry = await summary(ann, 'Summarise the retry policy', 'Retries back off exponentially.');
    const theirs = await summary(mallory, 'Their question', 'Their pgbouncer timeout too.');

    // A word of the output, whatever its case; of the message; several words must all be there.
    expect(await search(ann, 'q=pgbouncer')).toEqual([timeout.id]);
    expect(await search(ann, 'q=TIMEOUT')).toEqual([timeout.id]);
    expect(await search(ann, 'q=nightly')).toEqual([timeout.id]);
    expect(await search(ann, 'q=retry%20policy')).toEqual([retry.id]);
    expect(await search(ann, 'q=' + encodeURIComponent('"back off"'))).toEqual([retry.id]);
    expect(await search(ann, 'q=' + encodeURIComponent('pgbouncer or exponentially'))).toEqual([retry.id, timeout.id]);
    expect(await search(ann, 'q=' + encodeURIComponent('importer -pgbouncer'))).toEqual([]);
    // Each tenant finds only her own, by the same word.
    expect(await search(mallory, 'q=pgbouncer')).toEqual([theirs.id]);
    expect(await search(mallory, 'q=nightly')).toEqual([]);
    // Another tenant's project named outright answers 404, as the list does.
    await json(await server.request(`/threads?q=pgbouncer&project_id=${otherProject}`, as(ann)), 404);

    // A renamed thread is found by its new name.
    await json(
      await server.request(`/threads/${retry.id}`, { method: 'PATCH', json: { name: 'Backoff notes' }, ...as(ann) }),
      200,
    );
    expect(await search(ann, 'q=backoff')).toEqual([retry.id]);
  });

  it('narrows by agent, status, who made the thread and when, and pages through the results', async () => {
    const marker = `zebra${Date.now()}`;
    const made: string[] = [];
    for (let i = 0; i < 3; i++) made.push((await summary(ann, `Question ${i}`, `${marker} answer ${i}.`)).id);
    // Newest first, one page at a time, every thread on some page (one active in the second before the listing began
    // may come again after the others, as with any listing: see the cursor's description).
    const pages: string[] = [];
    let cursor: string | null = null;
    do {
      const page: ThreadPage = await json<ThreadPage>(
        await server.request(`/threads?q=${marker}&limit=1${cursor ? `&cursor=${cursor}` : ''}`, as(ann)),
        200,
      );
      pages.push(...page.items.map((t) => t.id));
      cursor = page.next_cursor;
    } while (cursor);
    expect([...new Set(pages)]).toEqual([...made].reverse());

    expect(await search(ann, `q=${marker}&agent=summary`)).toHaveLength(3);
    expect(await search(ann, `q=${marker}&agent=review`)).toEqual([]);
    expect(await search(ann, `q=${marker}&status=completed`)).toHaveLength(3);
    expect(await search(ann, `q=${marker}&status=error`)).toEqual([]);
    expect(await search(ann, `q=${marker}&started_by=${annId}`)).toHaveLength(3);
    expect(await search(ann, `q=${marker}&started_by=${randomUUID()}`)).toEqual([]);
    const later = new Date(Date.now() + 60_000).toISOString();
    expect(await search(ann, `q=${marker}&from=${encodeURIComponent(later)}`)).toEqual([]);
    expect(await search(ann, `q=${marker}&to=${encodeURIComponent(later)}`)).toHaveLength(3);
    // Bad filters are refused in words.
    const bad = await json<{ error: { message: string } }>(
      await server.request('/threads?status=sleeping', as(ann)),
      400,
    );
    expect(bad.error.message).toMatch(/^invalid query parameters: status/);
  });

  it('reads the full-text indexes: the query the list makes matches their expressions', async () => {
    const client = await pool.connect();
    try {
      // The test's few rows would be read straight from the tables; told not to, the planner shows what it can use.
      await client.query('SET enable_seqscan = off');
      const { rows } = await client.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN SELECT id FROM svc_threads t WHERE t.id IN (
           SELECT thread_id FROM svc_runs WHERE ${RUN_SEARCH_DOCUMENT} @@ websearch_to_tsquery('simple', 'pgbouncer')
           UNION SELECT id FROM svc_threads WHERE ${THREAD_SEARCH_DOCUMENT} @@ websearch_to_tsquery('simple', 'x'))`,
      );
      const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
      expect(plan).toMatch(/Bitmap Index Scan on svc_runs_search/);
      expect(plan).toMatch(/Bitmap Index Scan on svc_threads_search/);
    } finally {
      client.release();
    }
  });
});
