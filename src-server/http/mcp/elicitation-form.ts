import type { PendingGate } from '../../contracts/runs';
import type { Decision } from '../../services/approvals.service';
import { DecisionKind } from './mcp-schemas';
import { atLeast, FORM_MODE_SINCE } from './protocol-versions';

/** The most of a gate's content a question carries; the studio and get_run show all of it. */
export const MAX_QUESTION_CHARS = 16_000;

/** What `elicitation/create` asks: a message with the gated content, and a flat form. */
export interface Question {
  message: string;
  requestedSchema: {
    type: 'object';
    properties: Record<string, Record<string, unknown>>;
    required: string[];
  };
  /** The phase whose output an `edit` replaces: the last one the gate shows; null for a tool call. */
  contextNode: string | null;
}

const OPTIONS: Record<DecisionKind, { gate: string; tool: string }> = {
  approve: { gate: 'Approve', tool: 'Approve the call' },
  edit: { gate: 'Approve with my edited text', tool: 'Run it with my edited arguments (JSON)' },
  respond: { gate: 'Send my answer back to the phase before', tool: "Answer in the tool's place" },
  reject: { gate: 'Reject', tool: 'Reject the call' },
};

const cap = (text: string) => (text.length > MAX_QUESTION_CHARS ? `${text.slice(0, MAX_QUESTION_CHARS - 1)}…` : text);

/** The gated content as a person reads it: each phase the gate shows under its name, or the tool call. */
export function gatedContent(gate: PendingGate): string {
  const call = gate.tool_call;
  if (call) {
    return `${call.tool}: ${call.description}\narguments:\n${JSON.stringify(call.arguments, null, 2)}`;
  }
  return Object.entries(gate.context)
    .map(([node, text]) => `## ${node}\n${text}`)
    .join('\n\n');
}

/** The phase whose output an edit at a gate replaces: the last one the gate shows (the one just before it). */
export const editedPhase = (gate: PendingGate): string | null => Object.keys(gate.context).at(-1) ?? null;

/** The question put to a person at a gate or a tool call of a run of `agent`, in her client's revision's shapes. */
export function questionFor(agent: string, gate: PendingGate, version: string = FORM_MODE_SINCE): Question {
  const forTool = Boolean(gate.tool_call);
  const titleOf = (kind: DecisionKind) => (forTool ? OPTIONS[kind].tool : OPTIONS[kind].gate);
  // 2025-11-25 titles each option in `oneOf`; 2025-06-18 names them in `enumNames` beside `enum`.
  const options = atLeast(version, FORM_MODE_SINCE)
    ? { oneOf: DecisionKind.options.map((kind) => ({ const: kind, title: titleOf(kind) })) }
    : { enum: DecisionKind.options, enumNames: DecisionKind.options.map(titleOf) };
  return {
    message: cap(`${agent}: ${gate.question}\n\n${gatedContent(gate)}`),
    requestedSchema: {
      type: 'object',
      properties: {
        decision: { type: 'string', title: 'Decision', ...options },
        reason: { type: 'string', title: 'Reason', description: 'why (kept with the decision)' },
        text: {
          type: 'string',
          title: forTool ? 'Edited arguments or answer' : 'Edited text or answer',
          description: forTool
            ? 'for an edit: the arguments as a JSON object; for an answer: what the tool should have said'
            : 'for an edit: the text that replaces the output; for an answer: what to send back',
        },
      },
      required: ['decision'],
    },
    contextNode: forTool ? null : editedPhase(gate),
  };
}

/** What a person filled in: checked, since a client may send anything. */
export interface FormAnswer {
  decision: DecisionKind;
  reason: string | null;
  text: string | null;
}

/** The form's content as an answer, or why it is not one. */
export function readAnswer(content: unknown): FormAnswer | string {
  const fields = (content ?? {}) as Record<string, unknown>;
  const decision = DecisionKind.safeParse(fields.decision);
  if (!decision.success) return `the decision must be one of ${DecisionKind.options.join(', ')}`;
  const text = (key: string) => (typeof fields[key] === 'string' && fields[key].trim() ? fields[key] : null);
  return { decision: decision.data, reason: text('reason'), text: text('text') };
}

/**
 * The decision an answer makes, at a gate (`contextNode`: the phase an edit replaces) or at a tool call (an edit is
 * its arguments in JSON); a string says what is missing or wrong.
 */
export function decisionOf(
  answer: FormAnswer,
  at: { toolCall: boolean; contextNode: string | null },
): Decision | string {
  const { decision, reason, text } = answer;
  if (decision === 'approve') return { decision: 'approve', reason };
  if (decision === 'reject') return { decision: 'reject', reason };
  if (!text) return `${decision === 'edit' ? 'an edit' : 'an answer'} needs the text`;
  if (decision === 'respond') return { decision: 'respond', reason, response: text };
  if (!at.toolCall) {
    if (!at.contextNode) return 'this gate shows no output to edit';
    return { decision: 'approve', reason, edits: { [at.contextNode]: text } };
  }
  let edited: unknown;
  try {
    edited = JSON.parse(text);
  } catch {
    return 'the edited arguments are not JSON';
  }
  if (!edited || typeof edited !== 'object' || Array.isArray(edited)) return 'the edited arguments must be an object';
  return { decision: 'approve', reason, arguments: edited as Record<string, unknown> };
}
