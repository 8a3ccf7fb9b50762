import { badRequest, conflict } from '../../contracts/errors';
import type { PendingGate } from '../../contracts/runs';
import type { Decision } from '../../services/approvals.service';
import { interruptId } from './lg-ids';
import type { LgInterrupt } from './lg-schemas';

/** How much of a thread's name an interrupt's description starts with: Agent Inbox shows 65 characters of a row. */
const THREAD_LABEL_MAX = 48;

/**
 * What a stop asks, after the thread's name (its first message unless a person renamed it): Agent Inbox lists each
 * waiting thread by its interrupt's name and description only, and every stop of an agent asks the same question.
 */
function stopDescription(question: string, threadName: string | null): string {
  const name = threadName?.trim();
  if (!name) return question;
  const label = name.length > THREAD_LABEL_MAX ? `${name.slice(0, THREAD_LABEL_MAX - 1).trimEnd()}\u2026` : name;
  return `${label} \u2014 ${question}`;
}

/**
 * A stop (a gate, or a tool call that asks) as the LangGraph clients read an interrupt's value: LangChain's
 * human-in-the-loop keys (`action_requests`, `review_configs`; Agent Chat UI), Agent Inbox's (`action_request`,
 * `config`, `description`; `arguments` is what its normaliser reads of a HITL request), and the native `gate`.
 * `threadName`: the name of the stop's thread, which its description begins with.
 */
export function lgInterrupt(runId: string, stopSeq: number, gate: PendingGate, threadName: string | null): LgInterrupt {
  const call = gate.tool_call;
  const name = call ? call.tool : gate.node;
  const args = call ? call.arguments : gate.context;
  const description = stopDescription(call ? call.description || `Call ${call.tool}?` : gate.question, threadName);
  return {
    id: interruptId(runId, stopSeq),
    value: {
      action_requests: [{ name, args, arguments: args, description }],
      review_configs: [{ action_name: name, allowed_decisions: ['approve', 'edit', 'reject', 'respond'] }],
      action_request: { action: name, args },
      config: { allow_accept: true, allow_edit: true, allow_respond: true, allow_ignore: true },
      description,
      gate,
    },
  };
}

/** One decision as these clients send it, reduced to what it means here. */
type Resume =
  | { type: 'approve' }
  | { type: 'edit'; args: Record<string, unknown> }
  | { type: 'reject'; message: string | null }
  | { type: 'respond'; message: string };

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const invalid = (why: string) => badRequest(`invalid request body: command.resume: ${why}`);

function text(value: unknown, what: string): string {
  if (typeof value === 'string' && value.trim()) return value;
  throw invalid(`${what} must be non-empty text`);
}

/** One decision, in the HITL form (`{type, edited_action, message}`) or Agent Inbox's (`{type, args}`). */
function oneDecision(decision: unknown): Resume {
  if (!isObject(decision) || typeof decision.type !== 'string') throw invalid('a decision needs a `type`');
  switch (decision.type) {
    case 'approve':
    case 'accept':
      return { type: 'approve' };
    case 'edit': {
      // HITL: edited_action {name, args}; Agent Inbox: args {action, args}.
      const action = isObject(decision.edited_action) ? decision.edited_action : decision.args;
      if (!isObject(action) || !isObject(action.args)) throw invalid('an edit needs `edited_action.args` (an object)');
      return { type: 'edit', args: action.args };
    }
    case 'reject':
      return { type: 'reject', message: typeof decision.message === 'string' ? decision.message : null };
    case 'ignore':
      return { type: 'reject', message: 'ignored' };
    case 'respond':
      return { type: 'respond', message: text(decision.message ?? decision.args, 'a response') };
    case 'response':
      return { type: 'respond', message: text(decision.args ?? decision.message, 'a response') };
    default:
      throw invalid(
        `unknown decision type "${decision.type}": approve, edit, reject, respond (or accept, response, ignore)`,
      );
  }
}

/**
 * What `command.resume` decides at the stop `current` (its interrupt id): a decision, a list of one (Agent Inbox),
 * `{decisions: [one]}` (HITL), or any of these under the interrupt's id. An id of an earlier stop is a conflict: the
 * client decided something that is no longer asked.
 */
export function parseResume(resume: unknown, current: string): Resume {
  let value = resume;
  if (isObject(value) && !('decisions' in value) && !('type' in value)) {
    const keys = Object.keys(value);
    if (keys.length !== 1) throw invalid('expected one decision, or one under the interrupt id');
    if (keys[0] !== current) {
      throw conflict(`interrupt ${keys[0]} is not pending: the thread waits at interrupt ${current}`);
    }
    value = value[keys[0]!];
  }
  if (isObject(value) && Array.isArray(value.decisions)) value = value.decisions;
  if (Array.isArray(value)) {
    if (value.length !== 1) throw invalid('one decision at a time: the thread waits at one stop');
    value = value[0];
  }
  return oneDecision(value);
}

/** The edited texts of a gate's shown phases: node id → text (the same checks as the native edit, in the service). */
function gateEdits(args: Record<string, unknown>): Record<string, string> {
  const edits: Record<string, string> = {};
  for (const [node, value] of Object.entries(args)) {
    if (typeof value !== 'string') throw invalid(`edited_action.args.${node} must be text`);
    edits[node] = value;
  }
  return edits;
}

/** A resume as the approvals service's one decision: an edit is of a gate's texts or a tool call's arguments. */
export function decisionOf(resume: Resume, toolCall: boolean): Decision {
  switch (resume.type) {
    case 'approve':
      return { decision: 'approve', reason: null };
    case 'edit':
      return toolCall
        ? { decision: 'approve', reason: null, arguments: resume.args }
        : { decision: 'approve', reason: null, edits: gateEdits(resume.args) };
    case 'reject':
      return { decision: 'reject', reason: resume.message };
    case 'respond':
      return { decision: 'respond', reason: null, response: resume.message };
  }
}
