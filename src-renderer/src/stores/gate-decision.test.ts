import type { GateApprovals, PendingGate, RunAccepted } from '@contracts/runs';
import { describe, expect, it } from 'vitest';
import {
  stopText,
  approvalsText,
  approvedBy,
  changedTexts,
  decideRoleText,
  decisionSummary,
  deadlineWords,
  formatSpan,
  noteFromEvent,
  noteFromRecord,
  outcomeText,
  sameStop,
  stillNeeded,
  toolOutcomeText,
  waitingText,
} from './gate-decision';
import { pendingWrite } from './pending-tool-call.fixture';

const RUN = '11111111-1111-4111-8111-111111111111';
const THREAD = '22222222-2222-4222-8222-222222222222';
const ada = { id: 'u-ada', name: 'Ada', at: '2026-01-01T12:05:00Z' };
const oneOfTwo: GateApprovals = { needed: 2, given: 1, by: [ada] };

describe('a decision in words', () => {
  it('says who did what, from an event or from the record', () => {
    expect(
      decisionSummary(noteFromEvent({ type: 'gate_approved', node: 'gate', reason: null, by: ['Ada', 'Ben'] })),
    ).toBe('Approved by Ada and Ben');
    expect(
      decisionSummary(noteFromEvent({ type: 'gate_edited', node: 'gate', reason: null, edits: {}, by: ['Ada'] })),
    ).toBe('Approved with edits by Ada');
    expect(
      decisionSummary(
        noteFromEvent({ type: 'gate_responded', node: 'gate', to: 'analysis', response: 'r', reason: null, by: 'Ben' }),
      ),
    ).toBe('Sent back to analysis by Ben');
    // Where the graph is known, its phases by their names.
    const names: Record<string, string> = { analysis: 'Review', gate: 'Approve publishing', triage: 'Triage' };
    const phase = (id: string) => names[id] ?? id;
    expect(
      decisionSummary(
        noteFromEvent({ type: 'gate_responded', node: 'gate', to: 'analysis', response: 'r', reason: null, by: 'Ben' }),
        phase,
      ),
    ).toBe('Sent back to Review by Ben');
    expect(
      decisionSummary(noteFromEvent({ type: 'gate_expired', node: 'gate', outcome: 'route', to: 'triage' }), phase),
    ).toBe('Expired: the run continued at Triage');
    expect(stopText('gate', false, phase)).toBe('Approval at “Approve publishing”');
    expect(stopText('output', true)).toBe('Tool call in “output”');
    expect(decisionSummary(noteFromEvent({ type: 'gate_rejected', node: 'gate', reason: 'no' }))).toBe('Rejected');
    expect(decisionSummary(noteFromEvent({ type: 'gate_expired', node: 'gate', outcome: 'route', to: 'triage' }))).toBe(
      'Expired: the run continued at triage',
    );
    const record = {
      id: '1',
      run_id: RUN,
      thread_id: THREAD,
      gate: 'gate',
      decided_by: { id: null, name: 'expiry' },
      role: null,
      reason: null,
      edits: null,
      response: null,
      outcome: 'approve' as const,
      route_to: null,
      tool_call_id: null,
      arguments: null,
      arguments_sha256: null,
      agent_version: null,
      policy_source: null,
      via: null,
      decided_at: '2026-01-01T12:30:00Z',
      imported: false,
    };
    // The clock is named no one: the record's `expiry` is not a person.
    expect(noteFromRecord({ ...record, decision: 'expire' })).toMatchObject({ deciders: [], outcome: 'approve' });
    expect(decisionSummary(noteFromRecord({ ...record, decision: 'expire' }))).toBe(
      'Expired: approved by its deadline rule',
    );
    expect(noteFromRecord({ ...record, decision: 'respond', route_to: 'analysis', response: 'more' })).toMatchObject({
      kind: 'respond',
      to: 'analysis',
      response: 'more',
      at: '2026-01-01T12:30:00Z',
    });
  });

  it('says where a decision was taken when it was in Slack', () => {
    const record = {
      id: '1',
      run_id: RUN,
      thread_id: THREAD,
      gate: 'gate',
      decided_by: { id: 'u-ada', name: 'Ada' },
      role: 'member' as const,
      reason: null,
      edits: null,
      response: null,
      outcome: null,
      route_to: null,
      tool_call_id: null,
      arguments: null,
      arguments_sha256: null,
      agent_version: null,
      policy_source: null,
      via: 'slack' as const,
      decided_at: '2026-01-01T12:30:00Z',
      imported: false,
    };
    expect(noteFromRecord({ ...record, decision: 'approve' })).toMatchObject({ via: 'slack' });
    expect(decisionSummary(noteFromRecord({ ...record, decision: 'approve' }))).toBe('Approved by Ada via Slack');
    expect(decisionSummary(noteFromRecord({ ...record, decision: 'reject' }))).toBe('Rejected by Ada via Slack');
    expect(
      decisionSummary(noteFromRecord({ ...record, decision: 'respond', route_to: 'analysis', response: 'more' })),
    ).toBe('Sent back to analysis by Ada via Slack');
    // Anywhere else (the studio, the API, MCP), the record names no place.
    expect(decisionSummary(noteFromRecord({ ...record, decision: 'approve', via: null }))).toBe('Approved by Ada');
    // A live event knows nothing of where it was taken: its record, once read, says.
    expect(noteFromEvent({ type: 'gate_approved', node: 'gate', reason: null, deciders: ['Ada'] })).not.toHaveProperty(
      'via',
    );
  });

  it('counts approvals, and knows whose are among them', () => {
    expect(approvalsText(oneOfTwo)).toBe('1 of 2 approvals');
    expect(approvalsText({ needed: 1, given: 0, by: [] })).toBe('0 of 1 approval');
    expect(stillNeeded(oneOfTwo)).toBe(1);
    expect(stillNeeded({ needed: 3, given: 1, by: [ada] })).toBe(2);
    // Nobody approved yet, or everyone did: nothing to wait "for more" of.
    expect(stillNeeded({ needed: 2, given: 0, by: [] })).toBeNull();
    expect(stillNeeded({ needed: 2, given: 2, by: [ada, ada] })).toBeNull();
    expect(stillNeeded(null)).toBeNull();
    expect(approvedBy(oneOfTwo, 'u-ada')).toBe(true);
    expect(approvedBy(oneOfTwo, 'u-ben')).toBe(false);
    expect(approvedBy(oneOfTwo, undefined)).toBe(false);
    expect(approvedBy(null, 'u-ada')).toBe(false);
  });

  it("tells a gate's deadline and what happens then, and how long it has waited", () => {
    const now = Date.parse('2026-01-01T12:05:00Z');
    const reject = { after_s: 1800, action: 'reject' as const, target: null };
    expect(deadlineWords('2026-01-01T12:30:00Z', reject, now)).toEqual({
      lead: 'Expires',
      then: ': then it is rejected and the run ends.',
    });
    expect(deadlineWords('2026-01-01T14:35:00Z', { ...reject, action: 'route', target: 'triage' }, now)?.then).toBe(
      ': then the run continues at triage.',
    );
    expect(deadlineWords('2026-01-01T12:00:00Z', { ...reject, action: 'approve' }, now)).toEqual({
      lead: 'Its deadline passed',
      then: ': then it is approved.',
    });
    expect(deadlineWords('2026-01-01T12:30:00Z', null, now)?.then).toBe('.');
    expect(deadlineWords(null, reject, now)).toBeNull();
    expect(deadlineWords(undefined, undefined, now)).toBeNull();
    expect(waitingText('2026-01-01T11:53:00Z', now)).toBe('waiting 12 min');
    expect([formatSpan(45_000), formatSpan(3 * 86_400_000 + 3_600_000)]).toEqual(['45 s', '3 d 1 h']);
    expect(decideRoleText(undefined)).toBe('members and above decide');
    expect(decideRoleText('owner')).toBe('owners and above decide');
  });

  it('sends only the texts a person changed, and only those the gate shows', () => {
    const shown = { analysis: 'first', risks: 'none' };
    expect(changedTexts(shown, { analysis: 'first', risks: 'some' })).toEqual({ risks: 'some' });
    expect(changedTexts(shown, { analysis: 'first', risks: 'none' })).toEqual({});
    expect(changedTexts(shown, { intake: 'not shown at the gate' })).toEqual({});
  });

  it('says what became of a decision, a partial approval included', () => {
    const accepted = (extra: Partial<RunAccepted> = {}): RunAccepted => ({
      run_id: RUN,
      thread_id: THREAD,
      status: 'running',
      last_event_id: 9,
      stream_url: `/runs/${RUN}/stream?last_event_id=9`,
      run_url: `/runs/${RUN}`,
      ...extra,
    });
    expect(outcomeText({ kind: 'approve' }, accepted({ status: 'waiting_approval', approvals: oneOfTwo }))).toBe(
      'Your approval is recorded: 1 of 2 approvals. The gate waits for 1 more.',
    );
    expect(outcomeText({ kind: 'edit', edits: { a: 'b' } }, accepted())).toBe(
      'Approved with your edits: the run goes on with them.',
    );
    expect(outcomeText({ kind: 'respond', response: 'more' }, accepted())).toMatch(/^Sent back/);
    expect(outcomeText({ kind: 'reject' }, accepted({ status: 'rejected' }))).toBe('Rejected: the run ends.');
    // On a tool call the run goes on whatever was decided.
    expect(toolOutcomeText({ kind: 'approve' }, accepted({ status: 'waiting_approval', approvals: oneOfTwo }))).toBe(
      'Your approval is recorded: 1 of 2 approvals. The call waits for 1 more.',
    );
    expect(toolOutcomeText({ kind: 'approve', arguments: { path: 'a' } }, accepted())).toBe(
      'Approved with your arguments: the call runs with them, and the run goes on.',
    );
    expect(toolOutcomeText({ kind: 'approve', allowForThread: true }, accepted())).toBe(
      'Approved: the call runs, and the run goes on. Its later calls on this thread run without asking.',
    );
    expect(toolOutcomeText({ kind: 'reject', reason: 'no' }, accepted())).toBe(
      'Rejected: the call is not run; the model is told, and the run goes on.',
    );
    expect(toolOutcomeText({ kind: 'respond', response: '42' }, accepted())).toMatch(/^Answered: the model reads/);
  });

  it("says what was decided on a tool call, and the arguments an edit ran it with, from the call's record", () => {
    const record = {
      id: '1',
      run_id: RUN,
      thread_id: THREAD,
      gate: 'intake',
      decided_by: { id: 'u-ada', name: 'Ada' },
      role: 'member' as const,
      reason: null,
      edits: null,
      response: null,
      outcome: null,
      route_to: null,
      tool_call_id: `${RUN}:intake:1:0:0`,
      arguments: '{"content":"edited","path":"notes.md"}',
      arguments_sha256: 'abc',
      agent_version: null,
      policy_source: null,
      via: null,
      decided_at: '2026-01-01T12:30:00Z',
      imported: false,
    };
    const edited = noteFromRecord({ ...record, decision: 'edit' });
    expect(edited).toMatchObject({ call_id: `${RUN}:intake:1:0:0`, arguments: record.arguments });
    expect(decisionSummary(edited)).toBe('Approved with edited arguments by Ada');
    expect(decisionSummary(noteFromRecord({ ...record, decision: 'respond', response: '42' }))).toBe(
      "Answered in the tool's place by Ada",
    );
    // A decision at a gate carries no call.
    expect(noteFromRecord({ ...record, decision: 'approve', tool_call_id: null, arguments: null })).not.toHaveProperty(
      'call_id',
    );
  });

  it('tells the stop on screen from another: the gate reached again after a respond is another', () => {
    const stop: PendingGate = {
      node: 'gate',
      question: 'Publish?',
      required_context: ['analysis'],
      context: { analysis: 'first' },
      waiting_since: '2026-01-01T12:00:00.000Z',
    };
    expect(sameStop(stop, { ...stop, waiting_since: '2026-01-01T12:00:00+00:00' })).toBe(true);
    expect(sameStop(stop, { ...stop, waiting_since: '2026-01-01T12:03:00Z' })).toBe(false);
    expect(sameStop(stop, { ...stop, context: { analysis: 'second' } })).toBe(false);
    expect(sameStop(stop, { ...stop, node: 'gate2' })).toBe(false);
    expect(sameStop(stop, null)).toBe(false);
  });

  it('tells one tool call of a phase from the next, even asked at the same moment with the same arguments', () => {
    const call = (place: number) => pendingWrite(`${RUN}:intake:1:0:${place}`);
    const first: PendingGate = {
      node: 'intake',
      question: 'Run project.write_file?',
      required_context: [],
      context: { 'project.write_file': '{}' },
      tool_call: call(0),
    };
    expect(sameStop(first, { ...first })).toBe(true);
    expect(sameStop(first, { ...first, tool_call: call(1) })).toBe(false);
    expect(sameStop(first, { ...first, tool_call: undefined })).toBe(false);
  });
});
