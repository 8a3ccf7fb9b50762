import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type {
  ApprovalItem,
  Checkpoint,
  GateDecisionRecord,
  RunAccepted,
  RunDetail,
} from '../../src-server/contracts/runs';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { gatedAgent, writeFixtureCatalog } from '../helpers/fixture-assets';
import { useIntegrationServer } from '../helpers/integration';
import type { ServerProcess } from '../helpers/process';
import type { TestServer } from '../helpers/server';
import { addUser, grantRole, signSession } from '../helpers/sessions';
import { eventOrder, readEvents, type ReceivedEvent } from '../helpers/sse';
import { until } from '../helpers/until';

/**
 * Approvals (docs/approvals.md): the four decisions, who may decide, how many must approve, the record of every
 * decision, expiry (also across a restart and across processes) and the inbox, with real PostgreSQL and real servers.
 */
const SECRET = 'a-session-secret-for-the-approvals-tests-0123';
const API_TOKEN = 'approvals-test-admin-token-0123456789';
// A short lease: expired gates are looked for every quarter of it, half a second.
const ENV = { AUTH_ENABLED: 'true', SESSION_SECRET: SECRET, SVC_API_TOKEN: API_TOKEN, RUN_LEASE_S: '2' };

const ctx = useIntegrationServer({ server: false });
let server: TestServer;
let generatedDir: string;

beforeAll(async () => {
  generatedDir = await writeFixtureCatalog([
    gatedAgent('pair-review', { approvals: 2 }),
    gatedAgent('owner-review', { decide_role: 'owner' }),
    gatedAgent('owner-pair', { decide_role: 'owner', approvals: 2 }),
    gatedAgent('lapsing-reject', { expiry: { after_s: 1, action: 'reject', target: null } }),
    gatedAgent('lapsing-approve', { expiry: { after_s: 1, action: 'approve', target: null } }),
    gatedAgent('lapsing-route', { expiry: { after_s: 1, action: 'route', target: 'output' } }),
    gatedAgent('slow-lapse', { expiry: { after_s: 4, action: 'approve', target: null } }),
  ]);
  server = await ctx.start({ ...ENV, GENERATED_DIR: generatedDir });
});

afterAll(async () => {
  await server?.close();
});

type Caller = { token: string; name: string; id: string };

/** A signed-in user with the given role on the default project (or none). */
async function person(name: string, role: 'viewer' | 'member' | 'owner' | null, project = DEFAULT_PROJECT_ID) {
  const id = await addUser(server.pool, name);
  if (role) await grantRole(server.pool, id, 'project', project, role);
  return { id, name, token: await signSession(id, SECRET, '1h', name) } satisfies Caller;
}

const as = (caller: Caller | null, path: string, init: { method?: string; json?: unknown } = {}) =>
  server.request(path, { ...init, headers: caller ? { authorization: `Bearer ${caller.token}` } : {} });

/** A run of `agent` up to its gate, started by the instance admin. */
async function toGate(agent = 'review', answer = ['The analysis says: ship it.'], projectId?: string) {
  ctx.model.reply(answer);
  const events = await readEvents(
    await server.request(`/graphs/${agent}/run`, {
      method: 'POST',
      json: { message: `Review for ${agent}`, ...(projectId ? { project_id: projectId } : {}) },
    }),
  );
  expect(events.at(-1)!.data.type).toBe('gate_waiting');
  const start = events[0]!.data as { run_id: string; thread_id: string };
  return { runId: start.run_id, threadId: start.thread_id, events };
}

async function decide(
  caller: Caller | null,
  threadId: string,
  decision: 'approve' | 'reject' | 'respond',
  json: Record<string, unknown> = {},
) {
  return as(caller, `/threads/${threadId}/gates/gate/${decision}`, { method: 'POST', json });
}

/** The resumed run's events, from a decision's RunAccepted. */
async function follow(res: Response): Promise<ReceivedEvent[]> {
  expect(res.status).toBe(202);
  const accepted = (await res.json()) as RunAccepted;
  return readEvents(await server.request(accepted.stream_url));
}

const detail = async (runId: string) => (await (await server.request(`/runs/${runId}`)).json()) as RunDetail;

/** The user message of each chat call the stand-in model received, in order. */
const prompts = () =>
  ctx.model.requests.map((body) => {
    const messages = body.messages as { role: string; content: string }[];
    return messages.filter((m) => m.role === 'user').at(-1)?.content ?? '';
  });

describe('the four decisions', () => {
  it('edit: the approver changes the gated text, and downstream phases read the edited text', async () => {
    const { runId, threadId } = await toGate('review', ['Original analysis: risky. ']);
    const before = ctx.model.requests.length;
    ctx.model.reply(['Published.']);
    const events = await follow(
      await decide(null, threadId, 'approve', {
        reason: 'tone it down',
        edits: { analysis: 'Edited analysis: low risk, one nit.' },
      }),
    );
    expect(eventOrder(events)).toEqual([
      'gate_edited:gate',
      'node_enter:output',
      'token:output',
      'node_exit:output',
      'run_done',
    ]);
    expect(events[0]!.data).toEqual({
      type: 'gate_edited',
      node: 'gate',
      reason: 'tone it down',
      edits: { analysis: 'Edited analysis: low risk, one nit.' },
      deciders: ['api-token'],
      by: ['api-token'],
    });
    // The stand-in answered every phase alike: the output phase's prompt shows the edited analysis, not the first.
    const outputPrompt = prompts().slice(before).join('\n');
    expect(outputPrompt).toContain('### analysis\nEdited analysis: low risk, one nit.');
    expect(outputPrompt).not.toContain('### analysis\nOriginal analysis');

    const run = await detail(runId);
    expect(run.status).toBe('completed');
    expect(run.decisions).toHaveLength(1);
    expect(run.decisions[0]).toMatchObject({
      decision: 'edit',
      decided_by: { name: 'api-token' },
      role: 'admin',
      reason: 'tone it down',
      edits: { analysis: 'Edited analysis: low risk, one nit.' },
    });
  });

  it('edit of a phase the gate does not show is refused, and the gate stays as it was', async () => {
    const { runId, threadId } = await toGate();
    const res = await decide(null, threadId, 'approve', { edits: { intake: 'not shown at this gate' } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain(
      '"intake" cannot be edited here',
    );
    const run = await detail(runId);
    expect(run).toMatchObject({ status: 'waiting_approval', decisions: [] });
    await follow(await decide(null, threadId, 'reject'));
  });

  it('respond: the phase before the gate runs again with the feedback, and the gate is reached again', async () => {
    const { runId, threadId } = await toGate('review', ['First analysis. ']);
    const before = ctx.model.requests.length;
    ctx.model.reply(['Second analysis, with tests. ']);
    const again = await follow(
      await decide(null, threadId, 'respond', { response: 'Please check the tests too.', reason: 'incomplete' }),
    );
    expect(eventOrder(again)).toEqual([
      'gate_responded:gate',
      'node_enter:analysis',
      'token:analysis',
      'node_exit:analysis',
      'node_enter:gate',
      'gate_waiting:gate',
    ]);
    expect(again[0]!.data).toEqual({
      type: 'gate_responded',
      node: 'gate',
      to: 'analysis',
      response: 'Please check the tests too.',
      reason: 'incomplete',
      deciders: ['api-token'],
      by: 'api-token',
    });
    // Only the analysis ran again, and its prompt carried its earlier answer and the feedback.
    const calls = prompts().slice(before);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toContain('First analysis.');
    expect(calls[0]).toContain("## Reviewer's feedback on your previous answer\nPlease check the tests too.");
    expect(again.at(-1)!.data).toMatchObject({ context: { analysis: 'Second analysis, with tests. ' } });

    ctx.model.reply(['Published.']);
    const done = await follow(await decide(null, threadId, 'approve'));
    expect(done.at(-1)!.data.type).toBe('run_done');
    // The output phase read the second analysis, without the feedback (it was for the analysis only).
    expect(prompts().at(-1)).toContain('Second analysis, with tests.');
    expect(prompts().at(-1)).not.toContain('Reviewer');

    const decisions = (await (await server.request(`/threads/${threadId}/decisions`)).json()) as GateDecisionRecord[];
    expect(decisions.map((d) => d.decision)).toEqual(['respond', 'approve']);
    expect(decisions[0]).toMatchObject({ response: 'Please check the tests too.', route_to: 'analysis' });
    const nodes = (await detail(runId)).nodes.map((n) => `${n.node_id}:${n.status}`);
    expect(nodes).toEqual([
      'intake:completed',
      'analysis:completed',
      'gate:completed',
      'analysis:completed',
      'gate:approved',
      'output:completed',
    ]);
  });
});

describe('who may decide', () => {
  it('a gate that needs two approvals: one person counts once, the second approval resumes the run', async () => {
    const ann = await person('Ann', 'member');
    const bob = await person('Bob', 'member');
    const { runId, threadId } = await toGate('pair-review');

    const first = await decide(ann, threadId, 'approve', { reason: 'fine by me' });
    expect(first.status).toBe(202);
    const firstAnswer = (await first.json()) as RunAccepted;
    expect(firstAnswer).toMatchObject({ status: 'waiting_approval', approvals: { needed: 2, given: 1 } });
    expect(firstAnswer.approvals!.by.map((a) => a.name)).toEqual(['Ann']);
    const waiting = await detail(runId);
    expect(waiting.status).toBe('waiting_approval');
    expect(waiting.approvals).toMatchObject({ needed: 2, given: 1, by: [{ id: ann.id, name: 'Ann' }] });
    expect(waiting.pending_gate).toMatchObject({ node: 'gate', approvals_needed: 2 });

    const twice = await decide(ann, threadId, 'approve');
    expect(twice.status).toBe(409);
    expect(((await twice.json()) as { error: { message: string } }).error.message).toContain(
      'you have already approved gate "gate"',
    );
    expect((await detail(runId)).approvals!.given).toBe(1);

    ctx.model.reply(['Published.']);
    const events = await follow(await decide(bob, threadId, 'approve'));
    expect(events[0]!.data).toMatchObject({ type: 'gate_approved', deciders: ['Ann', 'Bob'], by: ['Ann', 'Bob'] });
    expect(events.at(-1)!.data.type).toBe('run_done');
    const done = await detail(runId);
    expect(done.decisions.map((d) => `${d.decided_by.name}:${d.decision}:${d.role}`)).toEqual([
      'Ann:approve:member',
      'Bob:approve:member',
    ]);
    expect(done.approvals).toBeNull();
  });

  it('a gate that needs two approvals: a reject by either ends the run', async () => {
    const ann = await person('Ann2', 'member');
    const bob = await person('Bob2', 'member');
    const { runId, threadId } = await toGate('pair-review');
    expect((await decide(ann, threadId, 'approve')).status).toBe(202);
    const events = await follow(await decide(bob, threadId, 'reject', { reason: 'not yet' }));
    expect(eventOrder(events)).toEqual(['gate_rejected:gate', 'run_rejected']);
    expect(events[0]!.data).toMatchObject({ by: 'Bob2', reason: 'not yet' });
    expect((await detail(runId)).status).toBe('rejected');
  });

  it("a role below the gate's gets 403, and the gate is left untouched", async () => {
    const member = await person('Mia', 'member');
    const viewer = await person('Vic', 'viewer');
    const owner = await person('Olga', 'owner');
    const { runId, threadId } = await toGate('owner-review');

    for (const caller of [member, viewer]) {
      for (const decision of ['approve', 'reject', 'respond'] as const) {
        const res = await decide(caller, threadId, decision, decision === 'respond' ? { response: 'again' } : {});
        expect(res.status).toBe(403);
      }
    }
    const untouched = await detail(runId);
    expect(untouched).toMatchObject({ status: 'waiting_approval', decisions: [] });
    expect(untouched.pending_gate).toMatchObject({ decide_role: 'owner' });

    ctx.model.reply(['Published.']);
    const events = await follow(await decide(owner, threadId, 'approve'));
    expect(events.at(-1)!.data.type).toBe('run_done');
    expect((await detail(runId)).decisions[0]).toMatchObject({ decided_by: { name: 'Olga' }, role: 'owner' });
  });

  it('a decision record cannot be changed, even in the database', async () => {
    const { threadId } = await toGate();
    await follow(await decide(null, threadId, 'reject', { reason: 'kept as given' }));
    await expect(
      server.pool.query(`UPDATE svc_gate_decisions SET reason = 'rewritten' WHERE thread_id = $1`, [threadId]),
    ).rejects.toThrow('a gate decision is a record: it cannot be changed');
    const decisions = (await (await server.request(`/threads/${threadId}/decisions`)).json()) as GateDecisionRecord[];
    expect(decisions.map((d) => d.reason)).toEqual(['kept as given']);
  });
});

describe('a gate cannot be passed around', () => {
  it('a fork from past an approved gate waits at that gate again, with its role and approvals; an edit restarts the count', async () => {
    const mia = await person('Fork Mia', 'member');
    const oona = await person('Fork Oona', 'owner');
    const otto = await person('Fork Otto', 'owner');
    const { threadId } = await toGate('owner-pair', ['The approved analysis.']);
    expect((await decide(oona, threadId, 'approve')).status).toBe(202);
    ctx.model.reply(['Published the approved analysis.']);
    expect((await follow(await decide(otto, threadId, 'approve'))).at(-1)!.data.type).toBe('run_done');

    // The member forks from the checkpoint after the gate's decision, with her own analysis and message.
    const history = (await (await as(mia, `/threads/${threadId}/checkpoints`)).json()) as Checkpoint[];
    const pastGate = history.find((c) => c.node === 'gate' && c.next.includes('output'))!;
    expect(pastGate).toBeDefined();
    const calls = ctx.model.requests.length;
    const forked = await server.request(`/threads/${threadId}/checkpoints/${pastGate.checkpoint_id}/run`, {
      method: 'POST',
      json: { message: 'Publish mine instead', outputs: { analysis: 'An analysis nobody approved.' } },
      headers: { authorization: `Bearer ${mia.token}`, accept: 'application/json' },
    });
    expect(forked.status).toBe(200);
    const fork = (await forked.json()) as RunAccepted;
    const events = await readEvents(await as(mia, fork.stream_url));
    expect(eventOrder(events)).toEqual(['run_start', 'node_enter:gate', 'gate_waiting:gate']);
    expect(events.at(-1)!.data).toMatchObject({
      context: { analysis: 'An analysis nobody approved.' },
      decide_role: 'owner',
      approvals_needed: 2,
    });
    // Nothing after the gate ran, no model was called, and recording the fork decided nothing.
    expect(ctx.model.requests.length).toBe(calls);
    const waiting = await detail(fork.run_id);
    expect(waiting).toMatchObject({ status: 'waiting_approval', decisions: [], approvals: { needed: 2, given: 0 } });
    expect(waiting.nodes.map((n) => `${n.node_id}:${n.status}`)).toEqual(['gate:waiting_approval']);
    expect((await decide(mia, threadId, 'approve')).status).toBe(403);

    // An owner approves; an admin approves with an edit: the owner saw other text, so the gate reads 1 of 2 again.
    expect(await (await decide(oona, threadId, 'approve')).json()).toMatchObject({ approvals: { given: 1 } });
    const edited = await decide(null, threadId, 'approve', { edits: { analysis: 'The admin rewrote it.' } });
    expect(edited.status).toBe(202);
    const afterEdit = (await edited.json()) as RunAccepted;
    expect(afterEdit).toMatchObject({ status: 'waiting_approval', approvals: { needed: 2, given: 1 } });
    expect(afterEdit.approvals!.by.map((a) => a.name)).toEqual(['api-token']);
    // The approvers to come see the edited text, and the first owner may approve that text.
    expect((await detail(fork.run_id)).pending_gate!.context).toEqual({ analysis: 'The admin rewrote it.' });
    const [item] = ((await (await as(oona, '/approvals')).json()) as ApprovalItem[]).filter(
      (i) => i.run_id === fork.run_id,
    );
    expect(item).toMatchObject({
      context: { analysis: 'The admin rewrote it.' },
      approvals: { given: 1 },
      stop: { round: 2 },
    });
    // She approves the round she was shown now: the first one's text is not what passes.
    expect((await decide(oona, threadId, 'approve')).status).toBe(409);
    ctx.model.reply(['Published the rewritten analysis.']);
    const resumed = await follow(await decide(oona, threadId, 'approve', { round: item!.stop.round }));
    expect(resumed[0]!.data).toMatchObject({ type: 'gate_edited', by: ['api-token', 'Fork Oona'] });
    expect(resumed.at(-1)!.data.type).toBe('run_done');
    expect(prompts().at(-1)).toContain('### analysis\nThe admin rewrote it.');
    expect(prompts().at(-1)).not.toContain('nobody approved');
    const done = await detail(fork.run_id);
    expect(done.decisions.map((d) => `${d.decided_by.name}:${d.decision}`)).toEqual([
      'Fork Oona:approve',
      'api-token:edit',
      'Fork Oona:approve',
    ]);
  });

  it('a decision that comes too late says who decided, and when', async () => {
    const { threadId } = await toGate();
    await follow(await decide(null, threadId, 'reject', { reason: 'first' }));
    const late = await decide(null, threadId, 'approve');
    expect(late.status).toBe(409);
    expect(((await late.json()) as { error: { message: string } }).error.message).toMatch(
      /^gate "gate" is not pending on thread [0-9a-f-]+: rejected by api-token at \d{4}-\d\d-\d\dT/,
    );
  });

  it('edits name phases: a key such as __proto__ is refused, not taken for a plain approval', async () => {
    const { runId, threadId } = await toGate();
    const res = await server.request(`/threads/${threadId}/gates/gate/approve`, {
      method: 'POST',
      body: '{"edits": {"__proto__": {"analysis": "smuggled"}}}',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(await detail(runId)).toMatchObject({ status: 'waiting_approval', decisions: [] });
    await follow(await decide(null, threadId, 'reject'));
  });
});

describe('a decision names the round its person read', () => {
  const message = async (res: Response) => ((await res.json()) as { error: { message: string } }).error.message;
  const read = async (caller: Caller, runId: string) =>
    ((await (await as(caller, '/approvals')).json()) as ApprovalItem[]).find((i) => i.run_id === runId)!;
  const decideStop = (caller: Caller | null, stopId: string, json: Record<string, unknown>) =>
    as(caller, `/stops/${encodeURIComponent(stopId)}/decision`, { method: 'POST', json });

  it('after one approver edits a two-person gate, the round another read (or none) is refused; the round shown now decides', async () => {
    const ann = await person('Round Ann', 'member');
    const bob = await person('Round Bob', 'member');
    const { runId, threadId, events } = await toGate('pair-review', ['The first text.']);
    // Both read the stop in its first round: the run's id and its gate_waiting event's, as the run detail names it.
    const shown = await read(bob, runId);
    const stop = { kind: 'gate', id: `${runId}:${events.at(-1)!.id}`, round: 1, node: 'gate', tool_call: null };
    expect(shown.stop).toEqual(stop);
    expect((await detail(runId)).stop).toEqual(stop);

    const edited = await decideStop(ann, stop.id, {
      decision: 'approve',
      round: 1,
      edits: { analysis: 'Ann rewrote it.' },
    });
    expect(edited.status).toBe(202);
    expect(await edited.json()).toMatchObject({ status: 'waiting_approval', approvals: { needed: 2, given: 1 } });
    expect((await detail(runId)).stop).toEqual({ ...stop, round: 2 });

    // Bob approves what he read, through the gate's route, the stop's, or naming no round: refused each time.
    const changed = new RegExp(
      `^gate "gate" on thread ${threadId} changed since you read it: approved with edits by Round Ann at .+; ` +
        'it is at round 2 now: read it again and decide that round$',
    );
    for (const attempt of [
      await decide(bob, threadId, 'approve', { round: 1 }),
      await decideStop(bob, stop.id, { decision: 'approve', round: 1 }),
      await decideStop(bob, stop.id, { decision: 'approve' }),
      await decide(bob, threadId, 'reject', { round: 1, reason: 'not this' }),
    ]) {
      expect(attempt.status).toBe(409);
      expect(await message(attempt)).toMatch(changed);
    }
    const still = await detail(runId);
    expect(still).toMatchObject({ status: 'waiting_approval', approvals: { given: 1 }, stop: { round: 2 } });
    expect(still.decisions.map((d) => `${d.decided_by.name}:${d.decision}`)).toEqual(['Round Ann:edit']);

    // Read again: the edited text, in round 2, which he approves; the run goes on with the text he saw.
    const again = await read(bob, runId);
    expect(again).toMatchObject({ context: { analysis: 'Ann rewrote it.' }, stop: { id: stop.id, round: 2 } });
    ctx.model.reply(['Published.']);
    const resumed = await follow(
      await decideStop(bob, again.stop.id, { decision: 'approve', round: again.stop.round }),
    );
    expect(resumed[0]!.data).toMatchObject({ type: 'gate_edited', by: ['Round Ann', 'Round Bob'] });
    expect(resumed.at(-1)!.data.type).toBe('run_done');
    expect(prompts().at(-1)).toContain('Ann rewrote it.');
  });

  it("a stop's id names one stop: another tenant's is 404, a decided one 409 with who decided, a malformed one 400", async () => {
    const created = async (path: string, json: unknown) =>
      ((await (await server.request(path, { method: 'POST', json })).json()) as { id: string }).id;
    const org = await created('/orgs', { name: 'Stops Elsewhere' });
    const team = await created('/teams', { name: 'Team', parent_id: org });
    const elsewhere = await created('/projects', { name: 'Theirs', parent_id: team });
    const outsider = await person('Stops Outsider', 'owner', elsewhere);
    const { runId, events } = await toGate('review', ['Ours.']);
    const stopId = `${runId}:${events.at(-1)!.id}`;

    const theirs = await decideStop(outsider, stopId, { decision: 'approve', round: 1 });
    expect(theirs.status).toBe(404);
    expect(await message(theirs)).toBe(`no stop "${stopId}"`);
    expect((await detail(runId)).status).toBe('waiting_approval');
    for (const bad of [
      { decision: 'reject', edits: { analysis: 'x' } },
      { decision: 'respond' },
      { decision: 'approve', round: 0 },
    ]) {
      expect((await decideStop(null, stopId, bad)).status).toBe(400);
    }
    expect((await decideStop(null, 'not-a-stop', { decision: 'approve' })).status).toBe(400);
    expect((await decideStop(null, stopId, { decision: 'approve', arguments: { line: 'x' } })).status).toBe(400);

    const rejected = await decideStop(null, stopId, { decision: 'reject', round: 1, reason: 'not now' });
    expect(rejected.status).toBe(202);
    const late = await decideStop(null, stopId, { decision: 'approve', round: 1 });
    expect(late.status).toBe(409);
    expect(await message(late)).toMatch(
      new RegExp(`^stop "${stopId}" is not pending on thread .+: rejected by api-token at `),
    );
  });
});

describe('expiry', () => {
  async function expiresTo(agent: string) {
    const { runId, threadId, events } = await toGate(agent);
    const waiting = events.at(-1)!.data as { expires_at: string; waiting_since: string };
    expect(new Date(waiting.expires_at).getTime() - new Date(waiting.waiting_since).getTime()).toBe(1000);
    ctx.model.reply(['Went on.']);
    await until(async () => ((await detail(runId)).status === 'waiting_approval' ? undefined : true), 15_000);
    const stream = await readEvents(await server.request(`/runs/${runId}/stream`));
    return { runId, threadId, stream: stream.slice(stream.findIndex((e) => e.data.type === 'gate_waiting') + 1) };
  }

  it('a gate that expires with reject ends the run, recorded as decided by expiry', async () => {
    const { runId, stream } = await expiresTo('lapsing-reject');
    await until(async () => ((await detail(runId)).status === 'rejected' ? true : undefined));
    expect(eventOrder(stream)).toEqual(['gate_expired:gate', 'run_rejected']);
    expect(stream[0]!.data).toEqual({ type: 'gate_expired', node: 'gate', outcome: 'reject', to: null });
    const run = await detail(runId);
    expect(run.end_reason).toBe('nobody decided the gate after 1s');
    expect(run.decisions).toEqual([
      expect.objectContaining({ decision: 'expire', decided_by: { id: null, name: 'expiry' }, outcome: 'reject' }),
    ]);
  });

  it('a gate that expires with approve continues downstream', async () => {
    const { runId, stream } = await expiresTo('lapsing-approve');
    await until(async () => ((await detail(runId)).status === 'completed' ? true : undefined));
    expect(eventOrder(stream)).toEqual([
      'gate_expired:gate',
      'node_enter:output',
      'token:output',
      'node_exit:output',
      'run_done',
    ]);
    expect((await detail(runId)).decisions[0]).toMatchObject({ decision: 'expire', outcome: 'approve' });
  });

  it('a gate that expires with a route continues at the phase it names', async () => {
    const { runId, stream } = await expiresTo('lapsing-route');
    await until(async () => ((await detail(runId)).status === 'completed' ? true : undefined));
    expect(stream[0]!.data).toEqual({ type: 'gate_expired', node: 'gate', outcome: 'route', to: 'output' });
    expect(eventOrder(stream).slice(1)).toEqual(['node_enter:output', 'token:output', 'node_exit:output', 'run_done']);
    expect((await detail(runId)).decisions[0]).toMatchObject({ outcome: 'route', route_to: 'output' });
  });

  it('a gate that expires while its server is down acts once the server is back', async () => {
    const { runId, events } = await toGate('slow-lapse');
    const waiting = events.at(-1)!.data as { expires_at: string };
    await server.close();
    // Down past the deadline: nobody can act on it.
    await new Promise((r) => setTimeout(r, Math.max(0, new Date(waiting.expires_at).getTime() - Date.now()) + 500));
    const db = new pg.Client({ connectionString: ctx.db.url });
    await db.connect();
    const { rows } = await db.query(`SELECT status FROM svc_runs WHERE id = $1`, [runId]).finally(() => db.end());
    expect(rows[0].status).toBe('waiting_approval');
    ctx.model.reply(['After the restart.']);
    server = await ctx.start({ ...ENV, GENERATED_DIR: generatedDir });
    await until(async () => ((await detail(runId)).status === 'completed' ? true : undefined));
    const run = await detail(runId);
    expect(run.decisions.map((d) => d.decision)).toEqual(['expire']);
    expect(run.output).toBe('After the restart.');
  });

  describe('with two processes', () => {
    let other: ServerProcess;
    beforeAll(async () => {
      other = await ctx.spawn({ ...ENV, GENERATED_DIR: generatedDir });
    });

    it('exactly one process acts on an expired gate', async () => {
      const runs: string[] = [];
      // Several at once, so that both processes look for expired gates while there is more than one to take.
      for (let i = 0; i < 4; i++) runs.push((await toGate('lapsing-approve')).runId);
      await until(async () => {
        const statuses = await Promise.all(runs.map(async (id) => (await detail(id)).status));
        return statuses.every((s) => s === 'completed') ? true : undefined;
      }, 30_000);
      for (const runId of runs) {
        const stream = await readEvents(await server.request(`/runs/${runId}/stream`));
        expect(stream.filter((e) => e.data.type === 'gate_expired')).toHaveLength(1);
        expect(stream.filter((e) => e.data.type === 'run_done')).toHaveLength(1);
        expect((await detail(runId)).decisions).toHaveLength(1);
      }
      const lines = [...server.logs, ...other.output().split('\n')].filter(
        (l) => / gate gate expired /.test(l) && runs.some((id) => l.includes(`run=${id}`)),
      );
      expect(lines).toHaveLength(runs.length);
    });
  });
});

describe('the approvals inbox', () => {
  it('lists exactly the gates the caller may decide, across two organisations, oldest first; a decision from it works', async () => {
    const created = async (path: string, json: unknown) => {
      const res = await server.request(path, { method: 'POST', json });
      expect(res.status).toBe(201);
      return ((await res.json()) as { id: string }).id;
    };
    const org = await created('/orgs', { name: 'Acme' });
    const team = await created('/teams', { name: 'Platform', parent_id: org });
    const acme = await created('/projects', { name: 'Checkout', parent_id: team });
    const ann = await person('Inbox Ann', 'member', acme);
    const olga = await person('Inbox Olga', 'owner');
    const vic = await person('Inbox Vic', 'viewer');

    const acmeGate = await toGate('review', ['Acme analysis.'], acme);
    const ownerGate = await toGate('owner-review', ['Needs an owner.']);
    const defaultGate = await toGate('review', ['Default analysis.']);

    const inbox = async (caller: Caller) => {
      const res = await as(caller, '/approvals');
      expect(res.status).toBe(200);
      return ((await res.json()) as ApprovalItem[]).map((i) => i.run_id);
    };
    // Ann works in Acme only; Olga owns the default project; Vic may read but decides nothing.
    expect(await inbox(ann)).toEqual([acmeGate.runId]);
    expect(await inbox(olga)).toEqual(expect.arrayContaining([ownerGate.runId, defaultGate.runId]));
    expect(await inbox(olga)).not.toContain(acmeGate.runId);
    expect(await inbox(vic)).toEqual([]);

    const [item] = (await (await as(ann, '/approvals')).json()) as ApprovalItem[];
    expect(item).toMatchObject({
      run_id: acmeGate.runId,
      thread_id: acmeGate.threadId,
      agent: 'review',
      project: { id: acme, name: 'Checkout' },
      message: 'Review for review',
      gate: 'gate',
      question: 'Publish this review?',
      excerpt: 'Acme analysis.',
      context: { analysis: 'Acme analysis.' },
      expires_at: null,
      decide_role: 'member',
      approvals: { needed: 1, given: 0, by: [] },
    });
    // Oldest first: the admin sees every gate, in the order they started waiting.
    const all = ((await (await server.request('/approvals')).json()) as ApprovalItem[]).map((i) => i.waiting_since);
    expect(all).toEqual([...all].sort());

    ctx.model.reply(['Shipped.']);
    const events = await follow(
      await decide(ann, item!.thread_id, 'approve', { edits: { analysis: 'Acme analysis, edited from the inbox.' } }),
    );
    expect(events.at(-1)!.data.type).toBe('run_done');
    expect(prompts().at(-1)).toContain('Acme analysis, edited from the inbox.');
    expect(await inbox(ann)).toEqual([]);
    await follow(await decide(olga, ownerGate.threadId, 'reject'));
    await follow(await decide(olga, defaultGate.threadId, 'reject'));
  });
});
