import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { numberedTokens } from '../fixtures/fake-models';
import { useIntegrationServer } from '../helpers/integration';
import type { ServerProcess } from '../helpers/process';
import { followAccepted, readEvents } from '../helpers/sse';

const ctx = useIntegrationServer({ server: false });
let sql: pg.Pool;

beforeAll(() => {
  sql = new pg.Pool({ connectionString: ctx.db.url });
});
afterAll(() => sql?.end());

async function startRun(server: ServerProcess, agent: string, stopAfter: (text: string) => boolean) {
  let runId = '';
  let threadId = '';
  let seen = '';
  await readEvents(
    await server.request(`/graphs/${agent}/run`, { method: 'POST', json: { message: 'crash test' } }),
    (e) => {
      if (e.data.type === 'run_start') {
        runId = e.data.run_id;
        threadId = e.data.thread_id;
      }
      if (e.data.type === 'token') seen += e.data.text;
      return stopAfter(seen) || e.data.type === 'gate_waiting';
    },
  );
  return { runId, threadId, seen };
}

describe('kill -9 of the server', () => {
  it('during a streaming run: what was written survives, and after restart the run is taken over, followed and cancelled', async () => {
    ctx.model.reply(numberedTokens(400, 'tok'), 20);
    const lease = { RUN_LEASE_S: '2' };
    let server = await ctx.spawn(lease);
    const { runId, seen } = await startRun(server, 'summary', (text) => text.length > 400);
    await new Promise((r) => setTimeout(r, 700));
    await server.stop('SIGKILL');

    const stored = (await sql.query(`SELECT node_id, output, exited_at FROM svc_run_nodes WHERE run_id = $1`, [runId]))
      .rows;
    expect(stored).toHaveLength(1);
    expect(stored[0].output.length).toBeGreaterThan(0);
    // At most the tokens of the last flush interval are lost: what is stored is what streamed, in order.
    expect(stored[0].output.startsWith(seen.slice(0, stored[0].output.length))).toBe(true);
    expect(stored[0].output.length).toBeGreaterThanOrEqual(seen.length - 200);

    server = await ctx.spawn(lease);
    try {
      const detail = await (await server.request(`/runs/${runId}`)).json();
      expect(detail.status).toBe('running');
      // The restarted server takes the run over once its lease lapses; a client following from the start
      // gets what was stored, then the resumed run; cancelling it ends the stream.
      const events = await readEvents(await server.request(`/runs/${runId}/stream`), (e) => {
        if (e.data.type === 'run_resumed') {
          void server.request(`/runs/${runId}/cancel`, { method: 'POST', json: { reason: 'enough' } });
        }
      });
      expect(events[0]!.name).toBe('run_start');
      const ids = events.map((e) => e.id);
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
      expect(new Set(ids).size).toBe(ids.length);
      const resumedAt = events.findIndex((e) => e.name === 'run_resumed');
      expect(resumedAt).toBeGreaterThan(0);
      // Before the takeover: the tokens as they streamed (the client saw a prefix of them, or they of it).
      const text = events
        .slice(0, resumedAt)
        .map((e) => (e.data.type === 'token' ? e.data.text : ''))
        .join('');
      expect(text.length).toBeGreaterThan(0);
      expect(text.startsWith(seen) || seen.startsWith(text)).toBe(true);
      expect(events.at(-1)!.name).toBe('run_cancelled');
      const after = (await sql.query(`SELECT status, exited_at FROM svc_run_nodes WHERE run_id = $1`, [runId])).rows;
      for (const row of after) expect(row).toMatchObject({ status: 'cancelled', exited_at: expect.any(Number) });
    } finally {
      await server.stop();
    }
  });

  it('during a streaming run that no lease covers, older than the orphan age: swept to error at the next start', async () => {
    ctx.model.reply(numberedTokens(400, 'tok'), 20);
    let server = await ctx.spawn();
    const { runId } = await startRun(server, 'summary', (text) => text.length > 100);
    await server.stop('SIGKILL');
    // As a row written before runs carried leases: nobody will take it over, so the sweep closes it.
    await sql.query(
      `UPDATE svc_runs SET started_at = now() - interval '61 minutes', owner_id = NULL, lease_until = NULL WHERE id = $1`,
      [runId],
    );
    server = await ctx.spawn();
    try {
      const detail = await (await server.request(`/runs/${runId}`)).json();
      expect(detail.status).toBe('error');
      expect(detail.error_detail).toMatch(/^OrphanedRunError: /);
      expect(detail.nodes[0].status).toBe('error');
    } finally {
      await server.stop();
    }
  });

  it('during a waiting gate: the gate can still be approved after restart and the run completes', async () => {
    ctx.model.reply(['looks', ' fine']);
    let server = await ctx.spawn();
    const { runId, threadId } = await startRun(server, 'review', () => false);
    await server.stop('SIGKILL');
    server = await ctx.spawn();
    try {
      const resumed = await readEvents(
        await followAccepted(
          await server.request(`/threads/${threadId}/gates/gate/approve`, {
            method: 'POST',
            json: { reason: 'after crash' },
          }),
          (path) => server.request(path),
        ),
      );
      expect(resumed.map((e) => e.name)).toEqual([
        'gate_approved',
        'node_enter',
        'token',
        'token',
        'node_exit',
        'run_done',
      ]);
      expect(resumed.at(-1)!.data).toEqual({ type: 'run_done', run_id: runId, output: 'looks fine' });
    } finally {
      await server.stop();
    }
  });
});
