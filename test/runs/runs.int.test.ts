import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { numberedTokens } from '../fixtures/fake-models';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { eventOrder, readEvents, type ReceivedEvent } from '../helpers/sse';

const ctx = useIntegrationServer();

function run(body: Record<string, unknown>, agent = 'review', target: TestServer = ctx.server) {
  return target.request(`/graphs/${agent}/run`, { method: 'POST', json: body });
}

/** The decision itself: its JSON answer (202 RunAccepted), or its error. */
function decideOnly(threadId: string, decision: 'approve' | 'reject', target: TestServer = ctx.server) {
  return target.request(`/threads/${threadId}/gates/gate/${decision}`, {
    method: 'POST',
    json: { reason: decision === 'approve' ? 'approved in a test' : 'rejected in a test' },
  });
}

/** A decision, then the resumed run's stream at the `stream_url` it answered; its error answer if it was refused. */
async function decide(threadId: string, decision: 'approve' | 'reject', target: TestServer = ctx.server) {
  const res = await decideOnly(threadId, decision, target);
  if (res.status !== 202) return res;
  return target.request(((await res.json()) as { stream_url: string }).stream_url);
}

/** A review run up to its gate, as the stream tells it (consecutive tokens folded). */
const TO_THE_GATE = [
  'run_start',
  'node_enter:intake',
  'token:intake',
  'node_exit:intake',
  'node_enter:analysis',
  'token:analysis',
  'node_exit:analysis',
  'node_enter:gate',
  'gate_waiting:gate',
];

async function runToGate(): Promise<{ events: ReceivedEvent[]; runId: string; threadId: string }> {
  const events = await readEvents(await run({ message: 'Review: rename the config loader' }));
  const start = events[0]!.data;
  if (start.type !== 'run_start') throw new Error('no run_start');
  return { events, runId: start.run_id, threadId: start.thread_id };
}

async function nodeRows(runId: string) {
  const { rows } = await ctx.server.pool.query(
    `SELECT node_id, status, output, exited_at FROM svc_run_nodes WHERE run_id = $1 ORDER BY id`,
    [runId],
  );
  return rows as { node_id: string; status: string; output: string; exited_at: number | null }[];
}

async function runRow(runId: string) {
  const { rows } = await ctx.server.pool.query(`SELECT status, output, error_detail FROM svc_runs WHERE id = $1`, [
    runId,
  ]);
  return rows[0] as { status: string; output: string | null; error_detail: string | null };
}

describe('a run to its approval gate', () => {
  it('streams node events and tokens in order, then stops at the gate without run_done', async () => {
    ctx.model.reply(['Hello', ' from', ' the', ' model']);
    const { events, runId, threadId } = await runToGate();

    expect(eventOrder(events)).toEqual(TO_THE_GATE);
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1));
    const tokens = events
      .filter((e) => e.data.type === 'token' && e.data.node === 'intake')
      .map((e) => (e.data as { text: string }).text);
    expect(tokens).toEqual(['Hello', ' from', ' the', ' model']);
    const waiting = events.at(-1)!.data;
    expect(waiting).toMatchObject({
      type: 'gate_waiting',
      node: 'gate',
      question: 'Publish this review?',
      required_context: ['analysis'],
    });
    expect(waiting.type === 'gate_waiting' && waiting.context.analysis).toBe('Hello from the model');

    expect(await runRow(runId)).toMatchObject({ status: 'waiting_approval' });
    expect(await nodeRows(runId)).toEqual([
      { node_id: 'intake', status: 'completed', output: 'Hello from the model', exited_at: expect.any(Number) },
      { node_id: 'analysis', status: 'completed', output: 'Hello from the model', exited_at: expect.any(Number) },
      { node_id: 'gate', status: 'waiting_approval', output: '', exited_at: null },
    ]);
    const detail = await (await ctx.server.request(`/runs/${runId}`)).json();
    expect(detail).toMatchObject({
      id: runId,
      thread_id: threadId,
      status: 'waiting_approval',
      resumable: true,
      pending_gate: { node: 'gate' },
    });
    expect(
      ctx.server.logs.some((l) =>
        l.includes(`INFO svc.api graph run start agent=review model=fake-model thread=${threadId}`),
      ),
    ).toBe(true);
  });

  it('resumes the same checkpoint on approval and runs the output node', async () => {
    const { runId, threadId } = await runToGate();
    ctx.model.reply(['Final', ' answer']);
    const resumed = await readEvents(await decide(threadId, 'approve'));
    expect(eventOrder(resumed)).toEqual([
      'gate_approved:gate',
      'node_enter:output',
      'token:output',
      'node_exit:output',
      'run_done',
    ]);
    expect(resumed[0]!.id).toBe(10);
    expect(resumed.at(-1)!.data).toEqual({ type: 'run_done', run_id: runId, output: 'Final answer' });
    expect(await runRow(runId)).toMatchObject({ status: 'completed', output: 'Final answer' });
    expect((await nodeRows(runId)).map((n) => [n.node_id, n.status])).toEqual([
      ['intake', 'completed'],
      ['analysis', 'completed'],
      ['gate', 'approved'],
      ['output', 'completed'],
    ]);
    // The model saw the analysis in the output phase's prompt (same checkpoint, same state).
    expect(JSON.stringify(ctx.model.requests.at(-1))).toContain('### analysis');
  });

  it('ends the run on rejection without running downstream nodes', async () => {
    const { runId, threadId } = await runToGate();
    const calls = ctx.model.requests.length;
    const resumed = await readEvents(await decide(threadId, 'reject'));
    expect(eventOrder(resumed)).toEqual(['gate_rejected:gate', 'run_rejected']);
    expect(resumed[0]!.data).toEqual({
      type: 'gate_rejected',
      node: 'gate',
      reason: 'rejected in a test',
      deciders: ['anonymous'],
      by: 'anonymous',
    });
    expect(resumed.at(-1)!.data).toEqual({ type: 'run_rejected', run_id: runId, reason: 'rejected in a test' });
    expect(await runRow(runId)).toMatchObject({ status: 'rejected' });
    expect(await (await ctx.server.request(`/runs/${runId}`)).json()).toMatchObject({
      status: 'rejected',
      end_reason: 'rejected in a test',
    });
    const nodes = await nodeRows(runId);
    expect(nodes.map((n) => n.node_id)).not.toContain('output');
    expect(nodes.find((n) => n.node_id === 'gate')).toMatchObject({
      status: 'rejected',
      exited_at: expect.any(Number),
    });
    expect(ctx.model.requests.length).toBe(calls);
  });

  it('answers a decision with JSON (202) whatever the Accept header, and where to follow the run from', async () => {
    for (const accept of ['application/json', 'text/event-stream', '*/*']) {
      const { runId, threadId, events } = await runToGate();
      const res = await ctx.server.request(`/threads/${threadId}/gates/gate/approve`, {
        method: 'POST',
        json: {},
        headers: { accept },
      });
      expect(res.status).toBe(202);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const gateId = events.at(-1)!.id;
      expect(await res.json()).toEqual({
        run_id: runId,
        thread_id: threadId,
        status: 'running',
        last_event_id: gateId,
        stream_url: `/runs/${runId}/stream?last_event_id=${gateId}`,
        run_url: `/runs/${runId}`,
      });
      const followed = await readEvents(await ctx.server.request(`/runs/${runId}/stream?last_event_id=${gateId}`));
      expect(followed[0]!.data.type).toBe('gate_approved');
      expect(followed[0]!.id).toBe(gateId + 1);
      expect(followed.at(-1)!.data.type).toBe('run_done');
    }
  });

  it('answers 404 for a gate the graph does not have, and 409 for a real gate that is not pending', async () => {
    const { threadId } = await runToGate();
    for (const name of ['analysis', 'no-such-gate']) {
      const unknown = await ctx.server.request(`/threads/${threadId}/gates/${name}/approve`, {
        method: 'POST',
        json: {},
      });
      expect(unknown.status).toBe(404);
      expect((await unknown.json()).error).toEqual({
        code: 'not_found',
        message: `gate "${name}" not found: "review" has no gate of that name`,
      });
    }
    await readEvents(await decide(threadId, 'approve'));
    const again = await decide(threadId, 'approve');
    expect(again.status).toBe(409);
    // Who decided first, and when: a script that retried can tell whether the decision was its own.
    const { error } = await again.json();
    expect(error.code).toBe('conflict');
    expect(error.message).toMatch(
      new RegExp(
        `^gate "gate" is not pending on thread ${threadId}: approved by \\S+ at \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z$`,
      ),
    );
  });

  it('resumes exactly once when two approvals race, even through two server processes', async () => {
    const other = await ctx.start();
    try {
      const { runId, threadId } = await runToGate();
      const answers = await Promise.all([
        decideOnly(threadId, 'approve', ctx.server),
        decideOnly(threadId, 'approve', other),
      ]);
      expect(answers.map((a) => a.status).sort()).toEqual([202, 409]);
      await readEvents(await (answers[0]!.status === 202 ? ctx.server : other).request(`/runs/${runId}/stream`));
      await expect.poll(async () => (await runRow(runId)).status).toBe('completed');
      expect((await nodeRows(runId)).filter((n) => n.node_id === 'output')).toHaveLength(1);
    } finally {
      await other.close();
    }
  });

  it('keeps the paused checkpoint across a server restart', async () => {
    const { runId, threadId } = await runToGate();
    await ctx.restart();
    ctx.model.reply(['after', ' restart']);
    const resumed = await readEvents(await decide(threadId, 'approve'));
    expect(resumed.at(-1)!.data).toEqual({ type: 'run_done', run_id: runId, output: 'after restart' });
  });
});

describe('cancellation, failures and re-attaching', () => {
  it('cancels a run during a slow token stream: the model request is aborted and open nodes are closed', async () => {
    ctx.model.reply(numberedTokens(200, 't'), 50);
    const res = await run({ message: 'slow please' }, 'summary');
    let runId = '';
    const events = await readEvents(res, (e) => {
      if (e.data.type === 'run_start') runId = e.data.run_id;
      if (e.data.type === 'token' && e.data.text === 't2 ') {
        void ctx.server
          .request(`/runs/${runId}/cancel`, { method: 'POST', json: { reason: 'too slow' } })
          .then(async (r) => {
            expect(r.status).toBe(200);
            expect(await r.json()).toMatchObject({ run_id: runId, status: 'cancelled' });
          });
      }
      return false;
    });
    expect(events.at(-1)!.data).toEqual({ type: 'run_cancelled', run_id: runId, reason: 'too slow' });
    await expect.poll(() => ctx.model.disconnects).toBeGreaterThanOrEqual(1);
    expect(await runRow(runId)).toMatchObject({ status: 'cancelled' });
    expect(await (await ctx.server.request(`/runs/${runId}`)).json()).toMatchObject({
      status: 'cancelled',
      end_reason: 'too slow',
    });
    const nodes = await nodeRows(runId);
    expect(nodes).toEqual([
      {
        node_id: 'dispatch',
        status: 'cancelled',
        output: expect.stringContaining('t0 t1 t2'),
        exited_at: expect.any(Number),
      },
    ]);
    const again = await ctx.server.request(`/runs/${runId}/cancel`, { method: 'POST', json: {} });
    expect(again.status).toBe(409);
  });

  it('carries the reason of a cancel asked of another server process to the run_cancelled of the executing one', async () => {
    const other = await ctx.start();
    try {
      ctx.model.reply(numberedTokens(200, 't'), 50);
      let runId = '';
      const events = await readEvents(await run({ message: 'slow please' }, 'summary'), (e) => {
        if (e.data.type === 'run_start') runId = e.data.run_id;
        if (e.data.type === 'token' && e.data.text === 't2 ') {
          void other.request(`/runs/${runId}/cancel`, { method: 'POST', json: { reason: 'asked elsewhere' } });
        }
        return false;
      });
      expect(events.at(-1)!.data).toEqual({ type: 'run_cancelled', run_id: runId, reason: 'asked elsewhere' });
      expect(await (await ctx.server.request(`/runs/${runId}`)).json()).toMatchObject({
        end_reason: 'asked elsewhere',
      });
    } finally {
      await other.close();
    }
  });

  it('stores and streams <ExceptionClass>: <message> when the model fails, and logs the traceback on svc.sse', async () => {
    ctx.model.fail(500, 'the model crashed');
    const events = await readEvents(await run({ message: 'fail please' }, 'summary'));
    const last = events.at(-1)!.data;
    expect(last.type).toBe('run_error');
    const detail = last.type === 'run_error' ? last.error_detail : '';
    expect(detail).toMatch(/^\w+(Error|Exception)?: .*the model crashed/);
    const runId = (events[0]!.data as { run_id: string }).run_id;
    expect(await runRow(runId)).toMatchObject({ status: 'error', error_detail: detail });
    expect((await nodeRows(runId))[0]).toMatchObject({ node_id: 'dispatch', status: 'error' });
    const logged = ctx.server.logs.find((l) => l.includes(` ERROR svc.sse run ${runId}`));
    expect(logged).toContain(detail);
    expect(logged).toMatch(/\n\s+at /);
  });

  it('aborts a run after RUN_TIMEOUT_S with a TimeoutError', async () => {
    const quick = await ctx.start({ RUN_TIMEOUT_S: '1' });
    try {
      ctx.model.reply(
        Array.from({ length: 100 }, () => 'x'),
        100,
      );
      const events = await readEvents(await run({ message: 'forever' }, 'summary', quick));
      expect(events.at(-1)!.data).toMatchObject({ type: 'run_error', error_detail: 'TimeoutError: run exceeded 1s' });
    } finally {
      await quick.close();
    }
  });

  it('keeps running when the client disconnects, and a re-attach with Last-Event-ID loses nothing', async () => {
    ctx.model.reply(numberedTokens(30, 'w'), 10);
    const first = await readEvents(await run({ message: 'reattach' }, 'summary'), (e) => e.id === 5);
    const runId = (first[0]!.data as { run_id: string }).run_id;
    const rest = await readEvents(
      await ctx.server.request(`/runs/${runId}/stream`, { headers: { 'last-event-id': '5' } }),
    );
    const all = [...first, ...rest];
    expect(all.map((e) => e.id)).toEqual(all.map((_, i) => i + 1));
    expect(all.at(-1)!.data.type).toBe('run_done');
    // A client that saw nothing gets the whole stream, the same events.
    const whole = await readEvents(await ctx.server.request(`/runs/${runId}/stream`));
    expect(whole.map((e) => e.data)).toEqual(all.map((e) => e.data));
  });

  it('replays a finished run from the database when no process holds it', async () => {
    const { runId } = await runToGate();
    await ctx.restart();
    const replay = await readEvents(await ctx.server.request(`/runs/${runId}/stream`));
    expect(eventOrder(replay)).toEqual(TO_THE_GATE);
  });
});

describe('threads and runs', () => {
  it('lists threads most recent first, in pages', async () => {
    const created: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await ctx.server.request('/threads', { method: 'POST', json: { agent: 'summary' } });
      expect(res.status).toBe(201);
      created.push((await res.json()).id);
    }
    const page = await (await ctx.server.request('/threads?limit=2')).json();
    expect(page.items.map((t: { id: string }) => t.id)).toEqual([created[2], created[1]]);
    const next = await (await ctx.server.request(`/threads?limit=2&cursor=${page.next_cursor}`)).json();
    expect(next.items[0].id).toBe(created[0]);
    const project = await (
      await ctx.server.request('/projects', {
        method: 'POST',
        json: { name: 'Elsewhere', parent_id: '00000000-0000-4000-8000-000000000002' },
      })
    ).json();
    const elsewhere = await (
      await ctx.server.request('/threads', { method: 'POST', json: { agent: 'summary', project_id: project.id } })
    ).json();
    const filtered = await (await ctx.server.request(`/threads?project_id=${project.id}`)).json();
    expect(filtered.items.map((t: { id: string }) => t.id)).toEqual([elsewhere.id]);
    expect((await ctx.server.request(`/threads?project_id=${crypto.randomUUID()}`)).status).toBe(404);
  });

  it('returns every thread that existed when a listing began, one that gets a run while a script pages included', async () => {
    const project = await (
      await ctx.server.request('/projects', {
        method: 'POST',
        json: { name: 'Paged', parent_id: '00000000-0000-4000-8000-000000000002' },
      })
    ).json();
    const create = async () =>
      (
        await (
          await ctx.server.request('/threads', { method: 'POST', json: { agent: 'summary', project_id: project.id } })
        ).json()
      ).id as string;
    const created: string[] = [];
    for (let i = 0; i < 5; i++) created.push(await create());
    // Threads of the last hour, a minute apart, not of the second the listing begins in (those may come twice).
    for (const [i, id] of created.entries()) {
      await ctx.server.pool.query(
        `UPDATE svc_threads SET updated_at = now() - make_interval(mins => 10 - $2) WHERE id = $1`,
        [id, i],
      );
    }
    const pageOf = async (cursor: string | null) =>
      (await (
        await ctx.server.request(`/threads?project_id=${project.id}&limit=2${cursor ? `&cursor=${cursor}` : ''}`)
      ).json()) as { items: { id: string }[]; next_cursor: string | null };

    const first = await pageOf(null);
    expect(first.items.map((t) => t.id)).toEqual([created[4], created[3]]);
    // While the script reads page one, the oldest thread gets a run (it moves to the top) and a new thread appears.
    ctx.model.reply(['A summary.']);
    const run = await ctx.server.request('/agents/summary/runs', {
      method: 'POST',
      json: { message: 'again', thread_id: created[0] },
    });
    await readEvents(await ctx.server.request(((await run.json()) as { stream_url: string }).stream_url));
    const added = await create();

    const listed: string[] = first.items.map((t) => t.id);
    let cursor = first.next_cursor;
    for (let pages = 0; cursor && pages < 10; pages++) {
      const page = await pageOf(cursor);
      listed.push(...page.items.map((t) => t.id));
      cursor = page.next_cursor;
    }
    expect(cursor).toBeNull();
    expect(new Set(listed)).toEqual(new Set([...created, added]));
    // The older threads first, most recent first; then those updated since the listing began, the moved one first.
    expect(listed.slice(0, 4)).toEqual([created[4], created[3], created[2], created[1]]);
    expect(listed.slice(4)).toEqual([created[0], added]);
  });

  it('pages threads updated within the same millisecond without skipping any', async () => {
    const project = await (
      await ctx.server.request('/projects', {
        method: 'POST',
        json: { name: 'Same millisecond', parent_id: '00000000-0000-4000-8000-000000000002' },
      })
    ).json();
    const ids: string[] = [];
    for (const at of ['2026-01-05T09:31:12.123900Z', '2026-01-05T09:31:12.123400Z', '2026-01-05T09:31:12.123100Z']) {
      const id = (
        await (
          await ctx.server.request('/threads', { method: 'POST', json: { agent: 'summary', project_id: project.id } })
        ).json()
      ).id as string;
      await ctx.server.pool.query('UPDATE svc_threads SET updated_at = $2 WHERE id = $1', [id, at]);
      ids.push(id);
    }
    const listed: string[] = [];
    let cursor: string | null = null;
    do {
      const page = (await (
        await ctx.server.request(`/threads?project_id=${project.id}&limit=1${cursor ? `&cursor=${cursor}` : ''}`)
      ).json()) as { items: { id: string }[]; next_cursor: string | null };
      listed.push(...page.items.map((t) => t.id));
      cursor = page.next_cursor;
    } while (cursor && listed.length < 10);
    expect(listed).toEqual(ids);
  });

  it('deletes a thread with its runs, nodes and checkpoints', async () => {
    const { runId, threadId } = await runToGate();
    const res = await ctx.server.request(`/threads/${threadId}`, { method: 'DELETE' });
    expect(res.status).toBe(204);
    expect((await ctx.server.request(`/threads/${threadId}`)).status).toBe(404);
    expect((await ctx.server.request(`/runs/${runId}`)).status).toBe(404);
    const { rows } = await ctx.server.pool.query(
      `SELECT (SELECT count(*) FROM svc_run_nodes WHERE run_id = $1) AS nodes,
              (SELECT count(*) FROM graph_checkpoints.checkpoints WHERE thread_id = $2) AS checkpoints`,
      [runId, threadId],
    );
    expect(rows[0]).toEqual({ nodes: 0, checkpoints: 0 });
  });

  it('gives the run history of a thread, most recent first', async () => {
    const first = await readEvents(await run({ message: 'one' }, 'summary'));
    const threadId = (first[0]!.data as { thread_id: string }).thread_id;
    await readEvents(await run({ message: 'two', thread_id: threadId }, 'summary'));
    const runs = await (await ctx.server.request(`/threads/${threadId}/runs`)).json();
    expect(runs.map((r: { message: string; status: string }) => [r.message, r.status])).toEqual([
      ['two', 'completed'],
      ['one', 'completed'],
    ]);
  });

  it('starts one run when several requests for a run on one thread arrive at once; the others answer 409', async () => {
    const first = await readEvents(await run({ message: 'the first run of the thread' }, 'summary'));
    const threadId = (first[0]!.data as { thread_id: string }).thread_id;
    ctx.model.reply(numberedTokens(40, 's'), 20);
    const answers = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        ctx.server.request('/graphs/summary/run', {
          method: 'POST',
          json: { message: `at once ${i}`, thread_id: threadId },
          headers: { accept: 'application/json' },
        }),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409, 409, 409, 409]);
    const refused = (await answers.find((a) => a.status === 409)!.json()) as { error: { message: string } };
    expect(refused.error.message).toMatch(new RegExp(`^thread ${threadId} already has run [0-9a-f-]{36} running$`));
    const { rows } = await ctx.server.pool.query(`SELECT count(*)::int AS n FROM svc_runs WHERE thread_id = $1`, [
      threadId,
    ]);
    expect(rows[0].n).toBe(2);
    const started = (await answers.find((a) => a.status === 200)!.json()) as { run_id: string };
    await ctx.server.request(`/runs/${started.run_id}/cancel`, { method: 'POST', json: {} });
  });

  it('answers unknown ids with 404 and malformed ones with 400', async () => {
    const unknown = randomUUID();
    for (const path of [
      `/runs/${unknown}`,
      `/threads/${unknown}`,
      `/threads/${unknown}/runs`,
      `/runs/${unknown}/stream`,
    ]) {
      const res = await ctx.server.request(path);
      expect(res.status, path).toBe(404);
      expect((await res.json()).error.code).toBe('not_found');
    }
    const malformed = await ctx.server.request('/runs/not-a-uuid');
    expect(malformed.status).toBe(400);
    expect((await malformed.json()).error.message).toBe('invalid path parameters: id: must be a UUID');
    expect((await run({ message: 'x' }, 'no-such-agent')).status).toBe(404);
    const empty = await run({ message: '' });
    expect(empty.status).toBe(400);
    expect((await empty.json()).error.message).toBe('invalid request body: message: must not be empty');
  });
});
