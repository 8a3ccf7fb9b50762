import type { GateApprovals, GateDecision, PendingGate } from '../contracts/runs';
import type { Role } from '../contracts/tenancy';
import type { NewStopDecision, StopDecision } from '../storage/types';

/** A person's decision at a gate, as a service admits it (who may decide is the service's to check). */
export interface PersonDecision {
  kind: 'approve' | 'edit' | 'respond' | 'reject';
  by: { id: string; name: string };
  role: Role | null;
  reason: string | null;
  edits: Record<string, string> | null;
  response: string | null;
  /** respond: the phase that runs again. */
  routeTo: string | null;
  /**
   * A decision on a tool call: the call, and the arguments this person approves (the model's, or an edit's), in
   * canonical JSON with their SHA-256.
   */
  toolCall: { id: string; arguments: string; sha256: string; rerunAfter: number | null } | null;
  /** The door it came through, when not the API's own (Slack, mail): the record says so. */
  via?: 'slack' | 'email' | null;
}

export type Settlement =
  /** This person has approved in this round already: nothing is recorded. */
  | { outcome: 'duplicate' }
  /** Recorded; the gate waits for more approvals. */
  | { outcome: 'waiting'; record: NewStopDecision; approvals: GateApprovals }
  /** Recorded, and the run resumes with `decision`. */
  | { outcome: 'resume'; record: NewStopDecision; approvals: GateApprovals; decision: GateDecision };

const approving = (kind: string) => kind === 'approve' || kind === 'edit';

/**
 * A stop's round as people name it (contracts/stops.ts): 1 at first, one more for each edit taken there since. The
 * records count rounds from 0, so the stop's round is one more than its last record's.
 */
export function roundOf(before: readonly { round: number }[]): number {
  return Math.max(0, ...before.map((d) => d.round)) + 1;
}

/**
 * What a decision does at a stop at a gate, given the decisions taken there before it (docs/approvals.md):
 *
 * - approvals count once per person and round; an edit changes the text the others approve, so it opens a round of
 *   its own (the approvals before it were of other text) and counts as its first approval;
 * - the gate resumes once a round has the approvals it needs; every edit at the stop applies then, a later one's over
 *   an earlier one's, since each was shown to the approvers after it;
 * - a respond or a reject resumes it at once.
 */
export function settle(before: readonly StopDecision[], decision: PersonDecision, needed: number): Settlement {
  const current = roundOf(before) - 1;
  const round = current + (decision.kind === 'edit' ? 1 : 0);
  const inRound = before.filter((d) => d.round === round && approving(d.kind));
  if (approving(decision.kind) && inRound.some((d) => d.decidedBy.id === decision.by.id))
    return { outcome: 'duplicate' };
  const record: NewStopDecision = {
    kind: decision.kind,
    decidedBy: decision.by,
    role: decision.role,
    round,
    reason: decision.reason,
    edits: decision.edits,
    response: decision.response,
    routeTo: decision.routeTo,
    outcome: null,
    toolCallId: decision.toolCall?.id ?? null,
    arguments: approving(decision.kind) ? (decision.toolCall?.arguments ?? null) : null,
    argumentsSha256: approving(decision.kind) ? (decision.toolCall?.sha256 ?? null) : null,
    via: decision.via ?? null,
  };
  const now = new Date();
  const approvers = approving(decision.kind)
    ? [...inRound.map((d) => ({ by: d.decidedBy, at: d.decidedAt })), { by: decision.by, at: now }]
    : inRound.map((d) => ({ by: d.decidedBy, at: d.decidedAt }));
  const approvals: GateApprovals = {
    needed,
    given: approvers.length,
    by: approvers.map((a) => ({ id: a.by.id, name: a.by.name, at: a.at.toISOString() })),
  };
  const call = decision.toolCall;
  const base = {
    reason: decision.reason,
    ...(call ? { call_id: call.id } : {}),
    ...(call && call.rerunAfter !== null ? { rerun_after: call.rerunAfter } : {}),
  };
  if (decision.kind === 'respond') {
    const resume: GateDecision = {
      ...base,
      kind: 'respond',
      response: decision.response ?? '',
      to: decision.routeTo,
      deciders: [decision.by.name],
    };
    return { outcome: 'resume', record, approvals, decision: resume };
  }
  if (decision.kind === 'reject') {
    return {
      outcome: 'resume',
      record,
      approvals,
      decision: { ...base, kind: 'reject', deciders: [decision.by.name] },
    };
  }
  if (approvals.given < needed) return { outcome: 'waiting', record, approvals };
  if (decision.toolCall) {
    // The round's arguments: the edit that opened it (its approvers approved those), or the model's.
    const opened = [...before, record].find((d) => d.round === round && d.kind === 'edit');
    const resume: GateDecision = {
      ...base,
      kind: round > 0 ? 'edit' : 'approve',
      arguments: opened?.arguments ?? decision.toolCall.arguments,
      arguments_sha256: opened?.argumentsSha256 ?? decision.toolCall.sha256,
      deciders: approvals.by.map((a) => a.name),
    };
    return { outcome: 'resume', record, approvals, decision: resume };
  }
  const edits = Object.assign(
    {},
    ...before.filter((d) => d.kind === 'edit').map((d) => d.edits ?? {}),
    decision.edits ?? {},
  ) as Record<string, string>;
  const edited = Object.keys(edits).length > 0;
  const resume: GateDecision = {
    ...base,
    kind: edited ? 'edit' : 'approve',
    ...(edited ? { edits } : {}),
    deciders: approvals.by.map((a) => a.name),
  };
  return { outcome: 'resume', record, approvals, decision: resume };
}

/** What a gate's expiry decides, and its record, once its deadline has passed without a decision. */
export function expire(gate: PendingGate): { record: NewStopDecision; decision: GateDecision } {
  const expiry = gate.on_expiry ?? { action: 'reject' as const, target: null, after_s: 0 };
  const waited = expiry.after_s ? ` after ${formatDuration(expiry.after_s)}` : '';
  const call = gate.tool_call;
  const approves = call !== undefined && expiry.action === 'approve';
  const reason = `nobody decided the ${call ? 'tool call' : 'gate'}${waited}`;
  return {
    record: {
      kind: 'expire',
      decidedBy: { id: null, name: 'expiry' },
      role: null,
      round: 0,
      reason,
      edits: null,
      response: null,
      routeTo: expiry.target,
      outcome: expiry.action,
      toolCallId: call?.call_id ?? null,
      arguments: approves ? call!.canonical_arguments : null,
      argumentsSha256: approves ? call!.arguments_sha256 : null,
      via: null,
    },
    decision: {
      kind: 'expire',
      outcome: expiry.action,
      reason,
      to: expiry.target,
      deciders: ['expiry'],
      ...(call ? { call_id: call.call_id } : {}),
      ...(approves ? { arguments: call!.canonical_arguments, arguments_sha256: call!.arguments_sha256 } : {}),
      ...(approves && call!.interrupted ? { rerun_after: call!.attempts } : {}),
    },
  };
}

/** 172800 → `2d`, 5400 → `90m`: an expiry's wait, as the asset would have written it. */
export function formatDuration(seconds: number): string {
  for (const [unit, size] of [
    ['d', 86400],
    ['h', 3600],
    ['m', 60],
  ] as const) {
    if (seconds % size === 0) return `${seconds / size}${unit}`;
  }
  return `${seconds}s`;
}
