import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunAccepted, RunDetail } from '../../src-server/contracts/runs';
import { numberedTokens } from '../fixtures/fake-models';
import { useIntegrationServer } from '../helpers/integration';
import type { ServerProcess } from '../helpers/process';
import { requestServer } from '../helpers/request';
import { until } from '../helpers/until';

/**
 * A second message to a busy thread with two server processes on one PostgreSQL: a line of queued runs accepted by
 * both keeps its order, and is carried on by whichever process hears the thread is free (also after the process
 * executing the run ahead dies); an interrupt or a rollback sent to one process stops the run the other executes.
 */
const ctx = useIntegrationServer({ server: false });
const ENV = { RUN_LEASE_S: '2' };

let servers: ServerProcess[] = [];
let db: pg.Pool;

beforeAll(async () => {
  servers = await Promise.all([ctx.spawn(ENV), ctx.spawn(ENV)]);
  db = new pg.Pool({ connectionString: ctx.db.url, max: 2 });
});

afterAll(async () => {
  await db?.end();
  await Promise.all(servers.map((s) => s.stop()));
});

const on = (i: number) => servers[i % servers.length]!.url;

async function start(server: number, message: string, threadId?: string, strategy?: string): Promise<RunAccepted> {
  const res = await requestServer(on(server), '/agents/summary/runs', {
    method: 'POST',
    json: {
      message,
      ...(threadId ? { thread_id: threadId } : {}),
      ...(strategy ? { multitask_strategy: strategy } : {}),
    },
  });
  expect(res.status).toBe(202);
  return (await res.json()) as RunAccepted;
}

const detail = async (runId: string, server = 0) =>
  (await (await requestServer(on(server), `/runs/${runId}`)).json()) as RunDetail;

const waitFor = async (runId: string, server = 0) =>
  (await (await requestServer(on(server), `/runs/${runId}/wait?timeout_s=60`)).json()) as RunDetail;

/** The process executing a run, from the `<pid>-…` owner id in its row. */
async function executorOf(runId: string): Promise<number> {
  const { rows } = await db.query<{ owner_id: string | null }>('SELECT owner_id FROM svc_runs WHERE id = $1', [runId]);
  const pid = Number(rows[0]?.owner_id?.split('-')[0]);
  return servers.findIndex((s) => s.child.pid === pid);
}

describe('a busy thread across two processes', () => {
  it('enqueue: runs accepted by either process start one after the other, in the order they were accepted', async () => {
    ctx.model.reply(numberedTokens(20, 'q'), 10);
    const first = await start(0, 'run 0');
    const queued: RunAccepted[] = [];
    for (let i = 1; i <= 6; i++) queued.push(await start(i, `run ${i}`, first.thread_id, 'enqueue'));
    expect(queued.every((r) => r.status === 'queued')).toBe(true);

    const runs = [await waitFor(first.run_id)];
    for (const [i, r] of queued.entries()) runs.push(await waitFor(r.run_id, i));
    expect(runs.map((r) => r.status)).toEqual(Array(7).fill('completed'));
    const byStart = [...runs].sort((a, b) => Date.parse(a.started_at) - Date.parse(b.started_at));
    expect(byStart.map((r) => r.message)).toEqual(runs.map((r) => r.message));
    for (let i = 1; i < runs.length; i++) {
      expect(Date.parse(runs[i]!.started_at)).toBeGreaterThanOrEqual(Date.parse(runs[i - 1]!.finished_at!));
    }
  });

  it('enqueue: the line goes on when the process executing the run ahead dies', async () => {
    ctx.model.reply(numberedTokens(100, 'k'), 20);
    const first = await start(0, 'the run whose process dies');
    const next = await start(1, 'the run behind it', first.thread_id, 'enqueue');
    const executing = await until(async () => {
      const at = await executorOf(first.run_id);
      return at >= 0 ? at : undefined;
    });
    await until(async () => ((await detail(first.run_id, 1 - executing)).nodes.length > 0 ? true : undefined));
    servers[executing]!.child.kill('SIGKILL');
    const survivor = 1 - executing;
    expect((await waitFor(first.run_id, survivor)).status).toBe('completed');
    expect((await waitFor(next.run_id, survivor)).status).toBe('completed');
    servers[executing] = await ctx.spawn(ENV);
  });

  it('interrupt and rollback sent to one process stop the run the other executes', async () => {
    ctx.model.reply(numberedTokens(200, 'i'), 20);
    const first = await start(0, 'the run to interrupt');
    const executing = await until(async () => {
      const at = await executorOf(first.run_id);
      return at >= 0 ? at : undefined;
    });
    const other = 1 - executing;
    const interrupting = await start(other, 'the interrupting run', first.thread_id, 'interrupt');
    expect(interrupting.status).toBe('running');
    expect((await detail(first.run_id, executing)).status).toBe('cancelled');

    const rolledBack = interrupting.run_id;
    await until(async () => ((await detail(rolledBack)).nodes.some((n) => n.status === 'running') ? true : undefined));
    const holder = await executorOf(rolledBack);
    ctx.model.reply(['Replaced.']);
    const replacing = await start(1 - holder, 'the replacing run', first.thread_id, 'rollback');
    expect((await waitFor(replacing.run_id)).status).toBe('completed');
    // The removed run's process stopped: nothing of it is written after the rollback.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const left = await db.query<{ n: number }>(
      `SELECT (SELECT count(*) FROM svc_runs WHERE id = $1) + (SELECT count(*) FROM svc_run_events WHERE run_id = $1)
              + (SELECT count(*) FROM svc_run_nodes WHERE run_id = $1) AS n`,
      [rolledBack],
    );
    expect(Number(left.rows[0]!.n)).toBe(0);
    const history = (await (await requestServer(on(0), `/threads/${first.thread_id}/checkpoints`)).json()) as {
      run_id: string | null;
    }[];
    expect(history.some((c) => c.run_id === rolledBack)).toBe(false);
    expect(history.some((c) => c.run_id === replacing.run_id)).toBe(true);
  });
});
