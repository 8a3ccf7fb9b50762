import type { RunEventOf } from '@contracts/events';
import type { GateExpiry } from '@contracts/gate-policy';
import type { GateApprovals, GateDecision, GateDecisionRecord, PendingGate, RunAccepted } from '@contracts/runs';
import type { DecisionVia } from '@contracts/slack';
import type { Role } from '@contracts/tenancy';
import type { DecisionChoice, ToolDecisionChoice } from '../api/stops.api';
import { peopleList } from './person-name';

/**
 * A decision at a gate as the transcript, the approval card and the History tab show it: the decision itself, in the
 * one shape the server's graph and its events use (contracts' GateDecision), with where and, from a stored record,
 * by whose role and when it was taken.
 */
export type DecisionNote = GateDecision & {
  gate: string;
  role: Role | null;
  /** ISO 8601, from a stored record; a live event has none. */
  at: string | null;
  /** Where it was taken, from a stored record, when not through the API, the studio, MCP or /lg: Slack's buttons. */
  via?: DecisionVia | null;
};

type DecisionEvent = RunEventOf<'gate_approved' | 'gate_edited' | 'gate_responded' | 'gate_rejected' | 'gate_expired'>;

/** Who decided: `deciders`, or, in an event stored before API 1.2.0, the deprecated `by` (a name or a list). */
const deciders = (event: { deciders?: string[]; by?: string | string[] }) =>
  event.deciders ?? (event.by === undefined ? [] : Array.isArray(event.by) ? event.by : [event.by]);

/** A decision event of a run stream as a note. */
export function noteFromEvent(event: DecisionEvent): DecisionNote {
  const note = { gate: event.node, role: null, at: null };
  switch (event.type) {
    case 'gate_approved':
      return { ...note, kind: 'approve', deciders: deciders(event), reason: event.reason };
    case 'gate_edited':
      return { ...note, kind: 'edit', deciders: deciders(event), reason: event.reason, edits: event.edits };
    case 'gate_responded':
      return {
        ...note,
        kind: 'respond',
        deciders: deciders(event),
        reason: event.reason,
        response: event.response,
        to: event.to,
      };
    case 'gate_rejected':
      return { ...note, kind: 'reject', deciders: deciders(event), reason: event.reason };
    case 'gate_expired':
      return { ...note, kind: 'expire', deciders: [], reason: null, outcome: event.outcome, to: event.to };
  }
}

/** A stored decision record as a note; one on a tool call keeps the call and the arguments it ran with. */
export function noteFromRecord(record: GateDecisionRecord): DecisionNote {
  return {
    ...(record.tool_call_id ? { call_id: record.tool_call_id } : {}),
    ...(record.tool_call_id && record.arguments ? { arguments: record.arguments } : {}),
    kind: record.decision,
    gate: record.gate,
    deciders: record.decision === 'expire' ? [] : [record.decided_by.name],
    role: record.role,
    reason: record.reason,
    edits: record.edits ?? undefined,
    response: record.response ?? undefined,
    to: record.route_to,
    outcome: record.outcome ?? undefined,
    at: record.decided_at,
    via: record.via,
  };
}

/** A phase as people read it: its name where the graph is known, else its id. */
export type PhaseNamer = (id: string) => string;
const byId: PhaseNamer = (id) => id;

/** "Approved by Ada", "Sent back to Review by Ben via Slack", "Expired: rejected", … */
export function decisionSummary(note: DecisionNote, phase: PhaseNamer = byId): string {
  const via = note.via ? ` via ${note.via === 'slack' ? 'Slack' : 'mail'}` : '';
  const by = note.deciders.length ? ` by ${peopleList(note.deciders)}${via}` : via;
  switch (note.kind) {
    case 'approve':
      return `Approved${by}`;
    case 'edit':
      return note.call_id ? `Approved with edited arguments${by}` : `Approved with edits${by}`;
    case 'respond':
      if (note.call_id) return `Answered in the tool's place${by}`;
      return `Sent back${note.to ? ` to ${phase(note.to)}` : ''}${by}`;
    case 'reject':
      return `Rejected${by}`;
    case 'expire':
      return note.outcome === 'approve'
        ? 'Expired: approved by its deadline rule'
        : note.outcome === 'route'
          ? `Expired: the run continued at ${note.to ? phase(note.to) : 'another phase'}`
          : 'Expired: rejected by its deadline rule';
  }
}

/** "1 of 2 approvals". */
export function approvalsText(approvals: GateApprovals): string {
  return `${approvals.given} of ${approvals.needed} approval${approvals.needed === 1 ? '' : 's'}`;
}

/** After a partial approval: how many more the gate waits for; null when none or all are given. */
export function stillNeeded(approvals: GateApprovals | null): number | null {
  if (!approvals || approvals.given === 0 || approvals.given >= approvals.needed) return null;
  return approvals.needed - approvals.given;
}

/** Whether this person's approval is among those given (the same person may not approve twice). */
export function approvedBy(approvals: GateApprovals | null, userId: string | null | undefined): boolean {
  return Boolean(userId && approvals?.by.some((person) => person.id === userId));
}

/** 45 s, 25 min, 3 h 05 min, 2 d 4 h. */
export function formatSpan(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const min = Math.round(s / 60);
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  if (h < 48) return `${h} h ${String(min % 60).padStart(2, '0')} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

/** "waiting 12 min": how long a stop has waited (shown on its `waiting_since`, whose moment is its title). */
export function waitingText(since: string, now = Date.now()): string {
  return `waiting ${formatSpan(now - Date.parse(since))}`;
}

/** What the gate's expiry does, in words that finish "then …". */
export function expiryOutcome(expiry: GateExpiry): string {
  switch (expiry.action) {
    case 'approve':
      return 'it is approved';
    case 'reject':
      return 'it is rejected and the run ends';
    case 'route':
      return `the run continues at ${expiry.target ?? 'another phase'}`;
  }
}

/**
 * The deadline of a gate and what happens then, in the words around its moment (shown relative to now): "Expires" …
 * "in 25 min" … ": then it is rejected and the run ends." Null when the gate waits until someone decides.
 */
export function deadlineWords(
  expiresAt: string | null | undefined,
  expiry: GateExpiry | null | undefined,
  now = Date.now(),
): { lead: string; then: string } | null {
  if (!expiresAt) return null;
  return {
    lead: Date.parse(expiresAt) > now ? 'Expires' : 'Its deadline passed',
    then: expiry ? `: then ${expiryOutcome(expiry)}.` : '.',
  };
}

/** Who may decide: the gate's lowest role and every role above it. */
export function decideRoleText(role: Role | null | undefined): string {
  const lowest = role ?? 'member';
  return lowest === 'admin' ? 'administrators decide' : `${lowest}s and above decide`;
}

/** Where a run waits, in words: "Approval at “Approve publishing”", "Tool call in “Publish review”". */
export function stopText(node: string, toolCall: boolean, phase: PhaseNamer = byId): string {
  return toolCall ? `Tool call in “${phase(node)}”` : `Approval at “${phase(node)}”`;
}

/**
 * The phase a respond sends back to, for an item seen without its graph (the inbox): the one phase whose output the
 * gate shows, when it shows one; null otherwise ("the phase before the gate").
 */
export function sendBackFromContext(context: Record<string, string>): string | null {
  const nodes = Object.keys(context);
  return nodes.length === 1 ? nodes[0]! : null;
}

/** The texts a person changed, by node: only those of the gated items, and only those that differ. */
export function changedTexts(original: Record<string, string>, drafts: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(drafts).filter(([node, text]) => node in original && text !== original[node]),
  );
}

/** What became of a decision someone just took, said to them (and to screen readers). */
export function outcomeText(decision: DecisionChoice, accepted: RunAccepted): string {
  const more = stillNeeded(accepted.approvals ?? null);
  if (accepted.status === 'waiting_approval' && accepted.approvals && more !== null)
    return `Your approval is recorded: ${approvalsText(accepted.approvals)}. The gate waits for ${more} more.`;
  switch (decision.kind) {
    case 'approve':
      return 'Approved: the run goes on.';
    case 'edit':
      return 'Approved with your edits: the run goes on with them.';
    case 'respond':
      return 'Sent back: the phase before the gate runs again with your feedback, then the gate asks again.';
    case 'reject':
      return 'Rejected: the run ends.';
  }
}

/** What became of a decision someone just took on a tool call, said to them (and to screen readers). */
export function toolOutcomeText(choice: ToolDecisionChoice, accepted: RunAccepted): string {
  const more = stillNeeded(accepted.approvals ?? null);
  if (accepted.status === 'waiting_approval' && accepted.approvals && more !== null)
    return `Your approval is recorded: ${approvalsText(accepted.approvals)}. The call waits for ${more} more.`;
  switch (choice.kind) {
    case 'approve': {
      const granted = choice.allowForThread ? ' Its later calls on this thread run without asking.' : '';
      return choice.arguments
        ? `Approved with your arguments: the call runs with them, and the run goes on.${granted}`
        : `Approved: the call runs, and the run goes on.${granted}`;
    }
    case 'respond':
      return "Answered: the model reads your answer in the tool's place, and the run goes on.";
    case 'reject':
      return 'Rejected: the call is not run; the model is told, and the run goes on.';
  }
}

/**
 * Whether a stored gate is the stop on screen: the same gate (or tool call), reached at the same moment, showing the
 * same texts.
 */
export function sameStop(shown: PendingGate | null, stored: PendingGate | null): boolean {
  return Boolean(
    shown &&
    stored &&
    shown.node === stored.node &&
    shown.tool_call?.call_id === stored.tool_call?.call_id &&
    (shown.waiting_since === undefined ||
      stored.waiting_since === undefined ||
      Date.parse(shown.waiting_since) === Date.parse(stored.waiting_since)) &&
    JSON.stringify(shown.context) === JSON.stringify(stored.context),
  );
}
