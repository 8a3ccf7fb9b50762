import { describe, expect, it } from 'vitest';
import type { RunAccepted, RunDetail } from '../../src-server/contracts/runs';
import { numberedTokens } from '../fixtures/fake-models';
import { useIntegrationServer } from '../helpers/integration';
import { eventOrder, readEvents } from '../helpers/sse';
import { until } from '../helpers/until';

/**
 * A second message to a busy thread (docs/run-lifecycle.md#a-second-message-to-a-busy-thread): each of the four
 * strategies a run request may name, on one server (test/reliability/multitask-cluster.test.ts has two).
 */
const ctx = useIntegrationServer();

type Strategy = 'reject' | 'enqueue' | 'interrupt' | 'rollback';

async function start(agent: string, message: string, threadId?: string, strategy?: Strategy) {
  const res = await ctx.server.request(`/agents/${agent}/runs`, {
    method: 'POST',
    json: {
      message,
      ...(threadId ? { thread_id: threadId } : {}),
      ...(strategy ? { multitask_strategy: strategy } : {}),
    },
  });
  return res;
}

async function accepted(res: Response): Promise<RunAccepted> {
  expect(res.status).toBe(202);
  return (await res.json()) as RunAccepted;
}

const detail = async (runId: string) => {
  const res = await ctx.server.request(`/runs/${runId}`);
  return { status: res.status, run: (await res.json()) as RunDetail };
};

const waitFor = async (runId: string) =>
  (await (await ctx.server.request(`/runs/${runId}/wait?timeout_s=60`)).json()) as RunDetail;

/** A slow summary run (three phases of 30 tokens, 20 ms apart), started on a new thread. */
async function slowRun(message = 'the first message') {
  ctx.model.reply(numberedTokens(30, 't'), 20);
  return accepted(await start('summary', message));
}

describe('a second message to a busy thread', () => {
  it('reject, the default: 409 naming the active run, and nothing written', async () => {
    const first = await slowRun();
    const refused = await start('summary', 'a second message', first.thread_id);
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toBe(
      `thread ${first.thread_id} already has run ${first.run_id} running`,
    );
    const explicit = await start('summary', 'a second message', first.thread_id, 'reject');
    expect(explicit.status).toBe(409);
    const runs = (await (await ctx.server.request(`/threads/${first.thread_id}/runs`)).json()) as RunDetail[];
    expect(runs).toHaveLength(1);
    expect((await waitFor(first.run_id)).status).toBe('completed');
  });

  it('enqueue: runs after the active run, in order, each one listed as queued until its turn', async () => {
    const first = await slowRun();
    const second = await accepted(await start('summary', 'the second message', first.thread_id, 'enqueue'));
    const third = await accepted(await start('summary', 'the third message', first.thread_id, 'enqueue'));
    expect([second.status, third.status]).toEqual(['queued', 'queued']);
    const listed = (await (await ctx.server.request(`/threads/${first.thread_id}/runs`)).json()) as RunDetail[];
    expect(Object.fromEntries(listed.map((r) => [r.message, r.status]))).toMatchObject({
      'the first message': 'running',
      'the second message': 'queued',
      'the third message': 'queued',
    });
    // A reject sees the line as busy too.
    expect((await start('summary', 'a fourth', first.thread_id)).status).toBe(409);

    // The third run's stream: its place in the line, then the run, once the two ahead of it ended.
    const events = await readEvents(await ctx.server.request(third.stream_url));
    expect(events[0]!.data).toEqual({
      type: 'run_queued',
      run_id: third.run_id,
      thread_id: first.thread_id,
      position: 2,
    });
    expect(eventOrder(events).slice(1, 2)).toEqual(['run_start']);
    expect(events.at(-1)!.data.type).toBe('run_done');

    const runs = await Promise.all([first, second, third].map(async (r) => (await detail(r.run_id)).run));
    expect(runs.map((r) => r.status)).toEqual(['completed', 'completed', 'completed']);
    // One after the other: each started once the one before it had finished.
    for (const [before, after] of [
      [runs[0]!, runs[1]!],
      [runs[1]!, runs[2]!],
    ] as const) {
      expect(Date.parse(after.started_at)).toBeGreaterThanOrEqual(Date.parse(before.finished_at!));
    }
    const thread = (await (await ctx.server.request(`/threads/${first.thread_id}`)).json()) as {
      last_message: string;
    };
    expect(thread.last_message).toBe('the third message');
  });

  it('enqueue behind a run that waits for approval: it waits until the gate is decided and the run ends', async () => {
    ctx.model.reply(['Ship it.']);
    const first = await accepted(await start('review', 'review this'));
    expect((await waitFor(first.run_id)).status).toBe('waiting_approval');
    const second = await accepted(await start('review', 'and this', first.thread_id, 'enqueue'));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect((await detail(second.run_id)).run.status).toBe('queued');
    // The thread stands at the gate, in its own answer and in the list: the queued run does not hide it.
    type Listed = { id: string; last_run: { id: string; status: string } };
    const thread = (await (await ctx.server.request(`/threads/${first.thread_id}`)).json()) as Listed;
    expect(thread.last_run).toEqual({ id: first.run_id, status: 'waiting_approval' });
    const page = (await (await ctx.server.request('/threads?limit=200')).json()) as { items: Listed[] };
    expect(page.items.find((t) => t.id === first.thread_id)?.last_run.status).toBe('waiting_approval');
    await ctx.server.request(`/threads/${first.thread_id}/gates/gate/approve`, { method: 'POST', json: {} });
    expect((await waitFor(first.run_id)).status).toBe('completed');
    expect(await waitFor(second.run_id)).toMatchObject({ status: 'waiting_approval', message: 'and this' });
    await ctx.server.request(`/runs/${second.run_id}/cancel`, { method: 'POST', json: {} });
  });

  it('a queued run can be cancelled: its stream ends, and the line goes on without it', async () => {
    const first = await slowRun();
    const second = await accepted(await start('summary', 'cancel me', first.thread_id, 'enqueue'));
    const third = await accepted(await start('summary', 'keep me', first.thread_id, 'enqueue'));
    const cancel = await ctx.server.request(`/runs/${second.run_id}/cancel`, {
      method: 'POST',
      json: { reason: 'not needed' },
    });
    expect(cancel.status).toBe(200);
    const events = await readEvents(await ctx.server.request(second.stream_url));
    expect(eventOrder(events)).toEqual(['run_queued', 'run_cancelled']);
    expect((await waitFor(third.run_id)).status).toBe('completed');
    expect((await detail(second.run_id)).run).toMatchObject({ status: 'cancelled', end_reason: 'not needed' });
  });

  it('deleting a thread cancels its queued runs too: their followers hear it', async () => {
    const first = await slowRun();
    const queued = await accepted(await start('summary', 'queued, then gone', first.thread_id, 'enqueue'));
    const following = ctx.server.request(queued.stream_url).then(readEvents);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await ctx.server.request(`/threads/${first.thread_id}`, { method: 'DELETE' })).status).toBe(204);
    expect(eventOrder(await following)).toEqual(['run_queued', 'run_cancelled']);
  });

  it('interrupt: cancels the active run, keeping what it produced, and starts the new one at once', async () => {
    const first = await slowRun();
    await until(async () =>
      (await detail(first.run_id)).run.nodes.some((n) => n.exited_at !== null) ? true : undefined,
    );
    ctx.model.reply(['Done.']);
    const second = await accepted(await start('summary', 'never mind, do this', first.thread_id, 'interrupt'));
    expect(second.status).toBe('running');
    const interrupted = (await detail(first.run_id)).run;
    expect(interrupted).toMatchObject({ status: 'cancelled', end_reason: `interrupted by run ${second.run_id}` });
    expect(interrupted.nodes[0]!.output).toContain('t0 ');
    expect((await waitFor(second.run_id)).status).toBe('completed');
  });

  it('rollback: removes the active run with its events and checkpoints; the new run starts from before it', async () => {
    ctx.model.reply(['Kept.']);
    const kept = await accepted(await start('summary', 'the run that stays'));
    expect((await waitFor(kept.run_id)).status).toBe('completed');
    ctx.model.reply(numberedTokens(30, 't'), 20);
    const first = await accepted(await start('summary', 'a mistake', kept.thread_id));
    await until(async () =>
      (await detail(first.run_id)).run.nodes.some((n) => n.exited_at !== null) ? true : undefined,
    );
    ctx.model.reply(['Fixed.']);
    const second = await accepted(await start('summary', 'what I meant', kept.thread_id, 'rollback'));
    expect((await detail(first.run_id)).status).toBe(404);
    const { rows } = await ctx.server.pool.query(`SELECT count(*)::int AS n FROM svc_run_events WHERE run_id = $1`, [
      first.run_id,
    ]);
    expect(rows[0].n).toBe(0);
    expect((await waitFor(second.run_id)).status).toBe('completed');
    const history = (await (await ctx.server.request(`/threads/${kept.thread_id}/checkpoints`)).json()) as {
      run_id: string | null;
    }[];
    const runsInHistory = new Set(history.map((c) => c.run_id));
    expect(runsInHistory.has(first.run_id)).toBe(false);
    expect(runsInHistory.has(kept.run_id)).toBe(true);
    expect(runsInHistory.has(second.run_id)).toBe(true);
    const runs = (await (await ctx.server.request(`/threads/${kept.thread_id}/runs`)).json()) as RunDetail[];
    expect(runs.map((r) => r.message).sort()).toEqual(['the run that stays', 'what I meant']);
  });

  it('rollback of a run a person decided at answers 409 and leaves it as it was', async () => {
    ctx.model.reply(['Ship it.']);
    const first = await accepted(await start('review', 'review this'));
    expect((await waitFor(first.run_id)).status).toBe('waiting_approval');
    const responded = await ctx.server.request(`/threads/${first.thread_id}/gates/gate/respond`, {
      method: 'POST',
      json: { response: 'Check the tests too.' },
    });
    expect(responded.status).toBe(202);
    expect((await waitFor(first.run_id)).status).toBe('waiting_approval');
    const refused = await start('review', 'start over', first.thread_id, 'rollback');
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toBe(
      `run ${first.run_id} cannot be rolled back: a person decided at one of its stops; use interrupt to keep it`,
    );
    expect((await detail(first.run_id)).run.status).toBe('waiting_approval');
    // Interrupt keeps it, and goes on.
    const second = await accepted(await start('review', 'start over', first.thread_id, 'interrupt'));
    expect((await detail(first.run_id)).run.status).toBe('cancelled');
    expect((await waitFor(second.run_id)).status).toBe('waiting_approval');
    await ctx.server.request(`/runs/${second.run_id}/cancel`, { method: 'POST', json: {} });
  });

  it('refuses an unknown strategy with 400', async () => {
    const res = await start('summary', 'x', undefined, 'later' as Strategy);
    expect(res.status).toBe(400);
  });
});
