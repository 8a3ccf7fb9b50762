import type { RunEvent, RunEventOf } from '@contracts/events';
import type { GateDecisionKind } from '@contracts/runs';
import type { PendingToolCall } from '@contracts/tools';

/**
 * How a tool call went through: run without asking (`allowed`: its policy allows it, the thread granted it, or a
 * gate's approval covers it), never offered (`denied`), `waiting` for a person, or decided by one (or by the expiry).
 */
export type ToolCallStatus =
  'allowed' | 'denied' | 'waiting' | 'approved' | 'edited' | 'responded' | 'rejected' | 'expired';

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
}

/** The parts of the run view this module keeps: each phase's calls, and the transcript the calls take a place in. */
interface ToolView {
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
  };
}

/**
 * The events of a phase's tool calls: each call as it is made, the person's decision on one that asks, and its
 * answer. What the run does meanwhile (it waits, it goes on) is the run view's, as at a gate.
 */
export function applyToolEvent(view: ToolView, event: RunEvent): void {
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
