import type { RunEvent, RunEventOf } from '@contracts/events';
import type { GateDecisionKind } from '@contracts/runs';
import { stopId } from '@contracts/stops';
import type { ToolQuestionState } from '@contracts/tool-questions';
import type { PendingToolCall } from '@contracts/tools';

/**
 * How a tool call went through: run without asking (`allowed`: its policy allows it, the thread granted it, or a
 * gate's approval covers it), never offered (`denied`), `waiting` for a person, or decided by one (or by the expiry).
 */
export type ToolCallStatus =
  'allowed' | 'denied' | 'waiting' | 'approved' | 'edited' | 'responded' | 'rejected' | 'expired';

/**
 * A question the tool's server asked a person while the call ran (docs/approvals.md#questions-from-tool-servers): the
 * call waits for the answer, the run goes on running. Withdrawn when the server stopped asking, or the call was cut
 * off (the run taken over by another process, or ended), before anyone answered.
 */
export interface ToolQuestionView {
  /** `<run id>:<event id>`: where it is answered (POST /stops/{id}/answer). */
  stopId: string;
  mode: RunEventOf<'tool_question'>['mode'];
  /** The server's message: untrusted text, shown as text. */
  message: string;
  requestedSchema: Record<string, unknown> | null;
  urlHost: string | null;
  expiresAt: string;
  state: ToolQuestionState;
  /** Who answered; null while nobody has, and when nobody did. */
  by: string | null;
}

/** A tool call of a phase, in the order the phase made it. */
export interface ToolCallView {
  call_id: string;
  node: string;
  /** The full name, `<server>.<tool>` (or the name the model gave, for a tool that is not offered). */
  tool: string;
  server: string;
  /** The arguments as the model gave them; an edit's arguments are in the decision's record. */
  arguments: Record<string, unknown>;
  policy: RunEventOf<'tool_call'>['policy'];
  status: ToolCallStatus;
  /** Who decided a call that asked, and why; null while nobody has. */
  decision: {
    kind: GateDecisionKind;
    reason: string | null;
    deciders: string[];
    outcome?: 'approve' | 'reject' | 'route';
  } | null;
  /** A publish step's call: the phase whose approved text it writes, and the argument that text is in. */
  publish?: { from: string; content: string };
  /** The tool's answer (or the person's in its place, or why it did not run): untrusted text. Null until it comes. */
  result: string | null;
  is_error: boolean;
  /** What the tool's server asked a person during the call, oldest first. */
  questions: ToolQuestionView[];
}

/**
 * The parts of the run view this module keeps: each phase's calls, and the transcript the calls take a place in; the
 * run's id names the stops of its questions.
 */
interface ToolView {
  runId: string | null;
  toolCalls: Record<string, ToolCallView[]>;
  transcript: { node: string; text: string; toolCall?: ToolCallView }[];
}

const STATUS_OF_POLICY: Record<ToolCallView['policy'], ToolCallStatus> = {
  allow: 'allowed',
  granted: 'allowed',
  covered: 'allowed',
  ask: 'waiting',
  deny: 'denied',
};

const STATUS_OF_DECISION: Record<GateDecisionKind, ToolCallStatus> = {
  approve: 'approved',
  edit: 'edited',
  respond: 'responded',
  reject: 'rejected',
  expire: 'expired',
};

function callOf(view: ToolView, node: string, callId: string): ToolCallView | undefined {
  return view.toolCalls[node]?.find((call) => call.call_id === callId);
}

/** A new call of a phase: kept with the phase's calls, and in the transcript where the phase made it. */
function added(view: ToolView, call: ToolCallView): void {
  (view.toolCalls[call.node] ??= []).push(call);
  view.transcript.push({ node: call.node, text: '', toolCall: call });
}

/**
 * The call a run waits at, from its pending gate, when no tool_call event told it: a run rebuilt from its rows, or a
 * call that started, stopped before it answered, and asks again.
 */
function pendingCall(node: string, pending: PendingToolCall): ToolCallView {
  return {
    call_id: pending.call_id,
    node,
    tool: pending.tool,
    server: pending.server,
    arguments: pending.arguments,
    policy: 'ask',
    status: 'waiting',
    decision: null,
    result: null,
    is_error: false,
    questions: [],
  };
}

/** The questions of a run still waiting for an answer, with the call each belongs to. */
export function waitingQuestions(
  view: Pick<ToolView, 'toolCalls'>,
): { call: ToolCallView; question: ToolQuestionView }[] {
  return Object.values(view.toolCalls).flatMap((calls) =>
    calls.flatMap((call) => call.questions.filter((q) => q.state === 'asked').map((question) => ({ call, question }))),
  );
}

/** Questions nobody answered before their call was cut off: nobody can answer them any more. */
function withdraw(calls: readonly ToolCallView[]): void {
  for (const call of calls)
    for (const question of call.questions) if (question.state === 'asked') question.state = 'withdrawn';
}

/**
 * The events of a phase's tool calls: each call as it is made, the person's decision on one that asks, the questions
 * its server asks and their answers, and its answer. What the run does meanwhile (it waits, it goes on) is the run
 * view's, as at a gate. `id` is the event's: a question's stop is named by it.
 */
export function applyToolEvent(view: ToolView, event: RunEvent, id = 0): void {
  switch (event.type) {
    case 'tool_call': {
      if (callOf(view, event.node, event.call_id)) return;
      added(view, {
        call_id: event.call_id,
        node: event.node,
        tool: event.tool,
        server: event.server,
        arguments: event.arguments,
        policy: event.policy,
        ...(event.publish && { publish: event.publish }),
        status: STATUS_OF_POLICY[event.policy],
        decision: null,
        result: null,
        is_error: false,
        questions: [],
      });
      return;
    }
    case 'tool_waiting': {
      const pending = event.tool_call;
      if (!pending) return;
      const known = callOf(view, event.node, pending.call_id);
      if (known) known.status = 'waiting';
      else added(view, pendingCall(event.node, pending));
      return;
    }
    case 'tool_decided': {
      const call = callOf(view, event.node, event.call_id);
      if (!call) return;
      call.status = STATUS_OF_DECISION[event.decision];
      call.decision = {
        kind: event.decision,
        reason: event.reason,
        deciders: event.deciders,
        ...(event.outcome ? { outcome: event.outcome } : {}),
      };
      return;
    }
    case 'tool_question': {
      const call = callOf(view, event.node, event.call_id);
      const stop = view.runId ? stopId(view.runId, id) : null;
      if (!call || !stop || call.questions.some((q) => q.stopId === stop)) return;
      call.questions.push({
        stopId: stop,
        mode: event.mode,
        message: event.message,
        requestedSchema: event.requested_schema,
        urlHost: event.url_host,
        expiresAt: event.expires_at,
        state: 'asked',
        by: null,
      });
      return;
    }
    case 'tool_question_answered': {
      const question = callOf(view, event.node, event.call_id)?.questions.find((q) => q.stopId === event.stop_id);
      if (!question) return;
      question.state = event.action;
      question.by = event.by;
      return;
    }
    case 'run_resumed':
      if (event.node) withdraw(view.toolCalls[event.node] ?? []);
      return;
    case 'run_error':
    case 'run_cancelled':
      withdraw(Object.values(view.toolCalls).flat());
      return;
    case 'tool_result': {
      const call = callOf(view, event.node, event.call_id);
      if (!call) return;
      call.result = event.text;
      call.is_error = event.is_error;
      return;
    }
    default:
      return;
  }
}
