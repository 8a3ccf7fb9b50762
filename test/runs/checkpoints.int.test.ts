import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { SESSION_ISSUER } from '../../src-server/auth/authenticator';
import type { Checkpoint, RunAccepted } from '../../src-server/contracts/runs';
import { DEFAULT_ORG_ID } from '../../src-server/contracts/tenancy';
import { useIntegrationServer } from '../helpers/integration';
import { until } from '../helpers/until';
import { eventOrder, readEvents } from '../helpers/sse';

const SECRET = 'a-session-secret-for-checkpoint-tests-0123456789';
const ctx = useIntegrationServer({
  server: { AUTH_ENABLED: 'true', SESSION_SECRET: SECRET, SVC_API_TOKEN: 'checkpoint-tests-admin-token-0123456789' },
});

/** A user with `role` on the default organisation, and a session token for them. */
async function tokenFor(role: 'member' | 'viewer' | null): Promise<string> {
  const id = randomUUID();
  await ctx.server.pool.query(`INSERT INTO svc_users (id, issuer, subject, name) VALUES ($1, 'test', $2, $3)`, [
    id,
    id,
    role ?? 'outsider',
  ]);
  if (role) {
    await ctx.server.pool.query(
      `INSERT INTO svc_memberships (user_id, scope_type, scope_id, role) VALUES ($1, 'org', $2, $3)`,
      [id, DEFAULT_ORG_ID, role],
    );
  }
  return new SignJWT({ name: role ?? 'outsider' })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(id)
    .setIssuer(SESSION_ISSUER)
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(new TextEncoder().encode(SECRET));
}

async function runToGate(message = 'Review: rename the config loader') {
  const events = await readEvents(
    await ctx.server.request('/graphs/review/run', { method: 'POST', json: { message } }),
  );
  const start = events[0]!.data;
  if (start.type !== 'run_start') throw new Error('no run_start');
  return { runId: start.run_id, threadId: start.thread_id };
}

/** Decides the thread's gate and follows the run from there: the events of the leg the decision resumed. */
async function decide(threadId: string, decision: 'approve' | 'reject') {
  const res = await ctx.server.request(`/threads/${threadId}/gates/gate/${decision}`, { method: 'POST', json: {} });
  expect(res.status).toBe(202);
  const { stream_url } = (await res.json()) as RunAccepted;
  return ctx.server.request(stream_url);
}

async function checkpoints(threadId: string): Promise<Checkpoint[]> {
  const res = await ctx.server.request(`/threads/${threadId}/checkpoints`);
  expect(res.status).toBe(200);
  return (await res.json()) as Checkpoint[];
}

const fork = (threadId: string, checkpointId: string, body: Record<string, unknown>, headers = {}) =>
  ctx.server.request(`/threads/${threadId}/checkpoints/${checkpointId}/run`, { method: 'POST', json: body, headers });

/** Everything stored of a run: its row, its node rows and its event stream. */
async function stored(runId: string) {
  const pool = ctx.server.pool;
  const run = (await pool.query(`SELECT * FROM svc_runs WHERE id = $1`, [runId])).rows[0];
  const nodes = (await pool.query(`SELECT * FROM svc_run_nodes WHERE run_id = $1 ORDER BY id`, [runId])).rows;
  const events = (
    await pool.query(`SELECT seq, type, data FROM svc_run_events WHERE run_id = $1 ORDER BY seq`, [runId])
  ).rows;
  return { run, nodes, events };
}

/** The user message of the last model call: the run's message, then the earlier phases' outputs. */
function lastPrompt(): string {
  const messages = ctx.model.requests.at(-1)!.messages as { role: string; content: string }[];
  return messages.at(-1)!.content;
}

describe("a thread's checkpoints", () => {
  it('lists every checkpoint of a run oldest first: its start, after each phase, at the gate, after the decision', async () => {
    ctx.model.reply(['Looks', ' fine']);
    const { runId, threadId } = await runToGate();
    const atGate = await checkpoints(threadId);
    expect(atGate.map((c) => [c.node, c.next, c.pending_gate?.node ?? null])).toEqual([
      [null, ['intake'], null],
      ['intake', ['analysis'], null],
      ['analysis', ['gate'], 'gate'],
    ]);
    expect(atGate.every((c) => c.run_id === runId && c.source === 'loop')).toBe(true);
    expect(atGate[0]!.state).toEqual({
      message: 'Review: rename the config loader',
      outputs: {},
      route: null,
      route_rule: null,
      approved: null,
      decision_reason: null,
      last_node: null,
    });
    expect(atGate[2]!.state.outputs).toEqual({ intake: 'Looks fine', analysis: 'Looks fine' });
    expect(atGate[2]!.pending_gate).toMatchObject({
      question: 'Publish this review?',
      context: { analysis: 'Looks fine' },
    });

    await readEvents(await decide(threadId, 'approve'));
    const done = await checkpoints(threadId);
    expect(done.slice(0, 3)).toEqual(atGate);
    expect(done.map((c) => [c.node, c.next])).toEqual([
      [null, ['intake']],
      ['intake', ['analysis']],
      ['analysis', ['gate']],
      ['gate', ['output']],
      ['output', []],
    ]);
    expect(done[3]!.state).toMatchObject({ approved: true });
    expect(done[4]!.state.outputs.output).toBe('Looks fine');
    // Oldest first, each the child of the one before.
    for (let i = 1; i < done.length; i++) {
      expect(done[i]!.parent_checkpoint_id).toBe(done[i - 1]!.checkpoint_id);
      expect(Date.parse(done[i]!.created_at)).toBeGreaterThanOrEqual(Date.parse(done[i - 1]!.created_at));
    }

    // A second run on the thread continues the list, its checkpoints named by their run.
    const second = await readEvents(
      await ctx.server.request('/graphs/review/run', {
        method: 'POST',
        json: { message: 'And the logger?', thread_id: threadId },
      }),
    );
    const secondId = (second[0]!.data as { run_id: string }).run_id;
    const both = await checkpoints(threadId);
    expect(both.slice(0, 5)).toEqual(done);
    expect(both.slice(5).map((c) => [c.run_id, c.node])).toEqual([
      [secondId, null],
      [secondId, 'intake'],
      [secondId, 'analysis'],
    ]);
    // One tree across runs: the second run's first checkpoint follows the first run's end.
    expect(both[5]!.parent_checkpoint_id).toBe(done[4]!.checkpoint_id);
    // A window of the newest: the same items, the oldest one's node read from a parent outside the window.
    const res = await ctx.server.request(`/threads/${threadId}/checkpoints?limit=2`);
    expect(await res.json()).toEqual(both.slice(-2));
  });

  it('answers 404 for a thread that does not exist', async () => {
    expect((await ctx.server.request(`/threads/${randomUUID()}/checkpoints`)).status).toBe(404);
  });
});

describe('a run from a checkpoint (a branch on the same thread)', () => {
  it('forked before the gate with an edited message reaches the gate again; the original run stays as it was', async () => {
    ctx.model.reply(['First', ' look']);
    const { runId, threadId } = await runToGate();
    await readEvents(await decide(threadId, 'reject'));
    const before = await stored(runId);
    const history = await checkpoints(threadId);
    const afterIntake = history.find((c) => c.node === 'intake')!;

    ctx.model.reply(['Second', ' look']);
    const res = await fork(
      threadId,
      afterIntake.checkpoint_id,
      { message: 'Review: rename the settings loader' },
      { accept: 'application/json' },
    );
    expect(res.status).toBe(200);
    const accepted = (await res.json()) as RunAccepted;
    expect(accepted).toMatchObject({ thread_id: threadId, status: 'running' });
    expect(accepted.run_id).not.toBe(runId);
    const events = await readEvents(await ctx.server.request(accepted.stream_url));
    expect(eventOrder(events)).toEqual([
      'run_start',
      'node_enter:analysis',
      'token:analysis',
      'node_exit:analysis',
      'node_enter:gate',
      'gate_waiting:gate',
    ]);
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i + 1));
    // The edited message went to the model, with the output of the phase before the checkpoint.
    expect(lastPrompt()).toContain('Review: rename the settings loader');
    expect(lastPrompt()).not.toContain('config loader');
    expect(lastPrompt()).toContain('### intake\nFirst look');
    expect(events.at(-1)!.data).toMatchObject({ type: 'gate_waiting', context: { analysis: 'Second look' } });

    const detail = await (await ctx.server.request(`/runs/${accepted.run_id}`)).json();
    expect(detail).toMatchObject({
      thread_id: threadId,
      status: 'waiting_approval',
      message: 'Review: rename the settings loader',
      model: 'fake-model',
      resumable: true,
      pending_gate: { node: 'gate' },
    });
    expect(detail.nodes.map((n: { node_id: string }) => n.node_id)).toEqual(['analysis', 'gate']);

    // The original run: its row, its nodes and its stored stream are as they were.
    expect(await stored(runId)).toEqual(before);
    const runs = await (await ctx.server.request(`/threads/${threadId}/runs`)).json();
    expect(runs.map((r: { id: string; status: string }) => [r.id, r.status])).toEqual([
      [accepted.run_id, 'waiting_approval'],
      [runId, 'rejected'],
    ]);

    // The history keeps the original checkpoints and adds the branch: its branch point, child of the one forked.
    const after = await checkpoints(threadId);
    expect(after.slice(0, history.length)).toEqual(history);
    const branch = after.slice(history.length);
    expect(branch.map((c) => [c.run_id, c.source, c.node, c.next])).toEqual([
      [accepted.run_id, 'update', null, ['analysis']],
      [accepted.run_id, 'loop', 'analysis', ['gate']],
    ]);
    expect(branch[0]!.parent_checkpoint_id).toBe(afterIntake.checkpoint_id);
    expect(branch[0]!.state.message).toBe('Review: rename the settings loader');

    // The branch's gate is the thread's pending one: approving it ends the branch run.
    ctx.model.reply(['Published']);
    const resumed = await readEvents(await decide(threadId, 'approve'));
    expect(resumed.at(-1)!.data).toEqual({ type: 'run_done', run_id: accepted.run_id, output: 'Published' });
    expect(await stored(runId)).toEqual(before);
  });

  it("edits an earlier phase's output, the input of the phases after it; the answer is the run's stream by default", async () => {
    ctx.model.reply(['Draft']);
    const { threadId } = await runToGate();
    await readEvents(await decide(threadId, 'reject'));
    const atGate = (await checkpoints(threadId)).find((c) => c.pending_gate)!;

    const res = await fork(threadId, atGate.checkpoint_id, {
      outputs: { analysis: 'An analysis a person rewrote' },
      model: 'llama3.2',
    });
    expect(res.status).toBe(200);
    const events = await readEvents(res);
    expect(eventOrder(events)).toEqual(['run_start', 'node_enter:gate', 'gate_waiting:gate']);
    expect(events[0]!.data).toMatchObject({ model: 'llama3.2' });
    expect(events.at(-1)!.data).toMatchObject({ context: { analysis: 'An analysis a person rewrote' } });

    ctx.model.reply(['Done']);
    await readEvents(await decide(threadId, 'approve'));
    const request = ctx.model.requests.at(-1)!;
    expect(request.model).toBe('llama3.2');
    expect(lastPrompt()).toContain('### analysis\nAn analysis a person rewrote');
    expect(lastPrompt()).toContain('Review: rename the config loader');
  });

  it('refuses what cannot run: a run still active, the end of a run, an unknown checkpoint, a phase not yet run, all but one of forks at once', async () => {
    const { runId, threadId } = await runToGate();
    const history = await checkpoints(threadId);
    const start = history[0]!;
    const active = await fork(threadId, start.checkpoint_id, {});
    expect(active.status).toBe(409);
    expect((await active.json()).error.message).toBe(
      `thread ${threadId} has run ${runId} waiting for approval: approve, reject or cancel it first`,
    );

    await readEvents(await decide(threadId, 'approve'));
    const last = (await checkpoints(threadId)).at(-1)!;
    const ended = await fork(threadId, last.checkpoint_id, {});
    expect(ended.status).toBe(400);
    expect((await ended.json()).error.message).toContain('is where a run ended: nothing runs after it');

    const unknown = await fork(threadId, randomUUID(), {});
    expect(unknown.status).toBe(404);

    const notYet = await fork(threadId, start.checkpoint_id, { outputs: { analysis: 'too early' } });
    expect(notYet.status).toBe(400);
    expect((await notYet.json()).error.message).toContain('"analysis" had no output at checkpoint');
    // A name every object answers to is no phase that ran.
    const inherited = await fork(threadId, start.checkpoint_id, { outputs: { constructor: 'not a phase' } });
    expect(inherited.status).toBe(400);
    expect((await inherited.json()).error.message).toContain('"constructor" had no output at checkpoint');

    // Forks at once: the thread's row is locked for the check, so one starts and the others are told why not.
    ctx.model.reply(['Raced']);
    const raced = await Promise.all(
      [1, 2, 3, 4, 5].map((n) =>
        fork(threadId, start.checkpoint_id, { message: `fork ${n}` }, { accept: 'application/json' }),
      ),
    );
    expect(raced.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409]);
    const started = (await raced.find((r) => r.status === 200)!.json()) as RunAccepted;
    await readEvents(await ctx.server.request(started.stream_url));
    const runsAfterRace = await (await ctx.server.request(`/threads/${threadId}/runs`)).json();
    expect(runsAfterRace).toHaveLength(2);
    await readEvents(await decide(threadId, 'reject'));

    // Nothing refused left a run behind.
    const runs = await (await ctx.server.request(`/threads/${threadId}/runs`)).json();
    expect(runs).toHaveLength(2);
  });
});

describe('a run from where an earlier run ended', () => {
  it("follows that run with a new message: it sees that run's exchange, not what came after it; outputs are refused", async () => {
    const { threadId } = await runToGate('Review: rename the config loader');
    await readEvents(await decide(threadId, 'approve'));
    const firstEnd = (await checkpoints(threadId)).at(-1)!;
    expect(firstEnd.next).toEqual([]);
    await readEvents(
      await ctx.server.request('/graphs/review/run', {
        method: 'POST',
        json: { message: 'And the logger?', thread_id: threadId },
      }),
    );
    await readEvents(await decide(threadId, 'approve'));

    const edited = await fork(threadId, firstEnd.checkpoint_id, { message: 'x', outputs: { analysis: 'y' } });
    expect(edited.status).toBe(400);
    expect((await edited.json()).error.message).toContain(
      'is where a run ended; a run from it starts with its message',
    );

    ctx.model.reply(['About the cache']);
    const events = await readEvents(await fork(threadId, firstEnd.checkpoint_id, { message: 'And the cache?' }));
    expect(events.at(-1)!.data.type).toBe('gate_waiting');
    const runId = (events[0]!.data as { run_id: string }).run_id;
    // The whole conversation the model was given: the first run's exchange, then the new message.
    const prompt = (ctx.model.requests.at(-1)!.messages as { content: string }[]).map((m) => m.content).join('\n');
    expect(prompt).toContain('Review: rename the config loader');
    expect(lastPrompt()).toContain('And the cache?');
    expect(prompt).not.toContain('logger');
    const list = await checkpoints(threadId);
    const mine = list.filter((c) => c.run_id === runId);
    expect(mine.map((c) => c.node)).toEqual([null, 'intake', 'analysis']);
    expect(mine[0]!.parent_checkpoint_id).toBe(firstEnd.checkpoint_id);
    const run = await (await ctx.server.request(`/runs/${runId}`)).json();
    expect(run.forked_from).toEqual({ checkpoint_id: firstEnd.checkpoint_id, run_id: firstEnd.run_id });
  });
});

describe('a branch run whose process died', () => {
  it('before its branch point was written is taken over: the new process writes it and the branch runs from there', async () => {
    ctx.model.reply(['Before']);
    const { runId, threadId } = await runToGate();
    await readEvents(await decide(threadId, 'reject'));
    const afterIntake = (await checkpoints(threadId)).find((c) => c.node === 'intake')!;

    // What a fork leaves when its process dies at once: the run row, leased to that process, and nothing else.
    const branchId = randomUUID();
    await ctx.server.pool.query(
      `INSERT INTO svc_runs (id, thread_id, agent, model, status, message, owner_id, lease_until, forked_from)
       VALUES ($1, $2, 'review', 'fake-model', 'running', 'Review: taken over', 'a-process-that-died',
               now() - interval '1 minute', $3::jsonb)`,
      [
        branchId,
        threadId,
        JSON.stringify({
          checkpoint_id: afterIntake.checkpoint_id,
          run_id: runId,
          outputs: { intake: 'Edited intake' },
        }),
      ],
    );
    ctx.model.reply(['After', ' takeover']);
    const status = await until(async () => {
      const { rows } = await ctx.server.pool.query(`SELECT status FROM svc_runs WHERE id = $1`, [branchId]);
      return rows[0].status === 'waiting_approval' ? rows[0].status : undefined;
    }, 20_000);
    expect(status).toBe('waiting_approval');
    expect(lastPrompt()).toContain('Review: taken over');
    expect(lastPrompt()).toContain('### intake\nEdited intake');

    const branch = (await checkpoints(threadId)).filter((c) => c.run_id === branchId);
    expect(branch.map((c) => [c.source, c.node, c.next])).toEqual([
      ['update', null, ['analysis']],
      ['loop', 'analysis', ['gate']],
    ]);
    expect(branch[0]!.parent_checkpoint_id).toBe(afterIntake.checkpoint_id);
    const events = await readEvents(await ctx.server.request(`/runs/${branchId}/stream`));
    expect(eventOrder(events)).toEqual([
      'run_resumed:null',
      'node_enter:analysis',
      'token:analysis',
      'node_exit:analysis',
      'node_enter:gate',
      'gate_waiting:gate',
    ]);
  });
});

describe('roles', () => {
  let threadId: string;
  let checkpointId: string;
  beforeAll(async () => {
    ({ threadId } = await runToGate());
    await readEvents(await decide(threadId, 'reject'));
    checkpointId = (await checkpoints(threadId))[1]!.checkpoint_id;
  });

  const as = (token: string, path: string, init: RequestInit = {}) =>
    fetch(`${ctx.server.url}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers },
    });

  it('a viewer may list the checkpoints but not fork', async () => {
    const viewer = await tokenFor('viewer');
    const listed = await as(viewer, `/threads/${threadId}/checkpoints`);
    expect(listed.status).toBe(200);
    expect(await listed.json()).toHaveLength(5);
    const forked = await as(viewer, `/threads/${threadId}/checkpoints/${checkpointId}/run`, {
      method: 'POST',
      body: JSON.stringify({ message: 'a viewer tries' }),
    });
    expect(forked.status).toBe(403);
    const runs = await (await ctx.server.request(`/threads/${threadId}/runs`)).json();
    expect(runs).toHaveLength(1);
  });

  it('a member may fork; someone without a role on the project sees neither', async () => {
    const outsider = await tokenFor(null);
    expect((await as(outsider, `/threads/${threadId}/checkpoints`)).status).toBe(404);
    const refused = await as(outsider, `/threads/${threadId}/checkpoints/${checkpointId}/run`, {
      method: 'POST',
      body: '{}',
    });
    expect(refused.status).toBe(404);

    const member = await tokenFor('member');
    const forked = await as(member, `/threads/${threadId}/checkpoints/${checkpointId}/run`, {
      method: 'POST',
      body: JSON.stringify({ message: 'a member forks' }),
    });
    expect(forked.status).toBe(200);
    const events = await readEvents(forked);
    expect(events.at(-1)!.data.type).toBe('gate_waiting');
  });
});
