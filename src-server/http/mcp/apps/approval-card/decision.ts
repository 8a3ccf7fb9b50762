import type { z } from 'zod';
import type { DecideInput, DecisionKind } from '../../mcp-schemas';
import { resultText, type Phase, type Stop, type ToolResult } from './stops';

/** The arguments of decide_approval, as the server checks them. */
export type DecideArguments = z.infer<typeof DecideInput>;

/** What a person filled in on the card: the text is the edit, the answer or (for a rejection) the reason. */
export interface Answer {
  decision: DecisionKind;
  text: string;
  reason: string;
}

/**
 * The phase whose output an edit of a gate replaces, with that output: the last phase the gate shows, which the gated
 * content ends with (`## <phase>` and its text); the server replaces the same one. Null when the run's phases do not
 * say which it is.
 */
export function editedPhase(stop: Stop, phases: Phase[]): { node: string; text: string } | null {
  const shown = phases.filter((phase) => stop.content.endsWith(`## ${phase.id}\n${phase.output}`));
  const last = shown.sort((a, b) => b.output.length - a.output.length)[0];
  return last ? { node: last.id, text: last.output } : null;
}

/** decide_approval's arguments for an answer at a stop, or what is missing or wrong. */
export function decideArguments(stop: Stop, answer: Answer): DecideArguments | string {
  const { decision } = answer;
  const reason = answer.reason.trim();
  const where = stop.kind === 'gate' ? { gate: stop.gate } : { call_id: stop.callId };
  const base = { thread_id: stop.threadId, ...where, round: stop.round, decision, ...(reason ? { reason } : {}) };
  if (decision === 'approve') return base;
  if (decision === 'reject') {
    const why = answer.text.trim();
    return why ? { ...base, reason: why } : 'Say why you reject it.';
  }
  if (!answer.text.trim()) return decision === 'edit' ? 'Write the new text.' : 'Write your answer.';
  if (decision === 'respond' || stop.kind === 'gate') return { ...base, text: answer.text };
  let edited: unknown;
  try {
    edited = JSON.parse(answer.text);
  } catch {
    return 'The arguments are not JSON.';
  }
  if (!edited || typeof edited !== 'object' || Array.isArray(edited)) return 'The arguments must be a JSON object.';
  return { ...base, arguments: edited as Record<string, unknown> };
}

const DONE: Record<DecisionKind, string> = {
  approve: 'Approved',
  edit: 'Approved with your edit',
  respond: 'Your answer was sent',
  reject: 'Rejected',
};

/** What the card says once decide_approval answered: the outcome, or the tool's error text. */
export function outcomeOf(decision: DecisionKind, result: ToolResult): { ok: boolean; text: string } {
  if (result.isError) return { ok: false, text: resultText(result) || 'The decision was not taken.' };
  const answer = (result.structuredContent ?? {}) as Record<string, unknown>;
  const { status, approvals_needed: needed, approvals_given: given } = answer;
  if (status === 'waiting_approval' && typeof needed === 'number' && typeof given === 'number') {
    return {
      ok: true,
      text: `${DONE[decision]}: ${given} of ${needed} approvals given; the run waits for the others.`,
    };
  }
  if (status === 'running') return { ok: true, text: `${DONE[decision]}: the run goes on.` };
  return { ok: true, text: `${DONE[decision]}: the run is ${typeof status === 'string' ? status : 'decided'}.` };
}
