import { DEFAULT_GATE_POLICY } from '../../contracts/gate-policy';
import type { PendingGate, RunDetail } from '../../contracts/runs';
import type { Stop } from '../../contracts/stops';
import { gatedContent } from './elicitation-form';
import { studioThreadUrl as studioUrl } from '../../contracts/stops';
import type { RunResult } from './mcp-schemas';

/** What waits for a person, as the tools show it; `whyNotAsked` when the call could not ask. */
export function waitingOf(gate: PendingGate, stop: Stop, threadId: string, baseUrl: string, whyNotAsked?: string) {
  const call = gate.tool_call;
  return {
    kind: stop.kind,
    stop_id: stop.id,
    round: stop.round,
    gate: gate.node,
    ...(call
      ? { call_id: call.call_id, tool: call.tool, arguments: call.arguments, input_schema: call.input_schema }
      : {}),
    question: gate.question,
    content: gatedContent(gate),
    decide_role: gate.decide_role ?? DEFAULT_GATE_POLICY.decide_role,
    expires_at: gate.expires_at ?? null,
    ...(whyNotAsked ? { why_not_asked: whyNotAsked } : {}),
    studio_url: studioUrl(baseUrl, threadId),
  };
}

/** A run as get_run and run_agent answer it. */
export function runResult(run: RunDetail, baseUrl: string, whyNotAsked?: string): RunResult {
  const waiting = run.status === 'waiting_approval' && run.pending_gate;
  return {
    run_id: run.id,
    thread_id: run.thread_id,
    agent: run.agent,
    status: run.status,
    output: run.output,
    error_detail: run.error_detail,
    phases: run.nodes.map((node) => ({ id: node.node_id, status: node.status, output: node.output })),
    waiting: waiting && run.stop ? waitingOf(run.pending_gate!, run.stop, run.thread_id, baseUrl, whyNotAsked) : null,
    decisions: run.decisions.map((d) => ({
      gate: d.gate,
      decision: d.decision,
      by: d.decided_by.name,
      reason: d.reason,
      tool_call_id: d.tool_call_id,
      at: d.decided_at,
    })),
    questions: run.questions.map((q) => ({
      stop_id: q.stop_id,
      tool: q.tool,
      server: q.server,
      mode: q.mode,
      message: q.message,
      requested_schema: q.requested_schema,
      url_host: q.url_host,
      expires_at: q.expires_at,
    })),
    studio_url: studioUrl(baseUrl, run.thread_id),
  };
}
