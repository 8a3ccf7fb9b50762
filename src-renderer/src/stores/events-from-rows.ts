import type { RunEvent } from '@contracts/events';
import type { GateDecisionRecord, RunDetail, RunNode } from '@contracts/runs';
import { endEvent } from './run-view';

/**
 * A run whose events are gone (they are kept RUN_EVENTS_RETENTION_DAYS) as the events its stream carried, rebuilt
 * from what outlives them: its node rows, its decision records and the routes it matched, in the order they
 * happened. The run view folds them as it folds a live stream. What only the events held (queue waits, context
 * trims, cold starts, the tool calls made and their answers) is not there; the tool call a run waits at is, from its
 * pending gate.
 */
export function eventsFromRows(detail: RunDetail): RunEvent[] {
  // On the same instant, a decision or a route comes before the phase it leads to.
  const steps: { at: number; first: boolean; events: RunEvent[] }[] = [
    ...detail.nodes.map((node) => ({ at: node.entered_at * 1000, first: false, events: nodeEvents(detail, node) })),
    ...decisionsTaken(detail).map((record) => ({
      at: Date.parse(record.decided_at),
      first: true,
      events: [decisionEvent(record)],
    })),
    ...detail.routes.map(({ from, to, rule, source, at }) => ({
      at: at * 1000,
      first: true,
      events: [{ type: 'route_matched', from, to, rule, ...(source ? { source } : {}) } satisfies RunEvent],
    })),
  ];
  steps.sort((a, b) => a.at - b.at || Number(b.first) - Number(a.first));
  const end = endEvent(detail);
  return [
    {
      type: 'run_start',
      run_id: detail.id,
      thread_id: detail.thread_id,
      agent: detail.agent,
      model: detail.model ?? '',
    },
    ...steps.flatMap((step) => step.events),
    ...(end ? [end] : []),
  ];
}

/**
 * One run of a phase: its reasoning, its answer and warnings, then how it ended, or the gate or the tool call it
 * waits at.
 */
function nodeEvents(detail: RunDetail, node: RunNode): RunEvent[] {
  const id = node.node_id;
  const events: RunEvent[] = [{ type: 'node_enter', node: id }];
  if (node.thinking) events.push({ type: 'thinking', node: id, text: node.thinking });
  if (node.output) events.push({ type: 'token', node: id, text: node.output });
  for (const warning of node.warnings) events.push({ type: 'node_warning', node: id, ...warning });
  if (node.status === 'waiting_approval') {
    const pending = detail.pending_gate;
    if (pending?.node === id) events.push({ type: pending.tool_call ? 'tool_waiting' : 'gate_waiting', ...pending });
  } else if (node.exited_at !== null) {
    const { queue_wait_ms, prompt_tokens, output_tokens } = node;
    events.push({ type: 'node_exit', node: id, status: node.status, queue_wait_ms, prompt_tokens, output_tokens });
  }
  return events;
}

/**
 * The decisions that moved the run at its gates: not the approvals a gate still waiting has so far (its card shows
 * those), nor the decisions on tool calls, whose calls the rows do not hold.
 */
function decisionsTaken(detail: RunDetail): GateDecisionRecord[] {
  const atGates = detail.decisions.filter((record) => !record.tool_call_id);
  const gate = detail.pending_gate?.node;
  const waiting = detail.nodes.findLast((node) => node.node_id === gate && node.status === 'waiting_approval');
  if (!waiting) return atGates;
  return atGates.filter((record) => record.gate !== gate || Date.parse(record.decided_at) < waiting.entered_at * 1000);
}

/** A decision record as the event its decision added to the stream; each approval of several as one of its own. */
function decisionEvent(record: GateDecisionRecord): RunEvent {
  const { gate: node, reason } = record;
  const deciders = [record.decided_by.name];
  switch (record.decision) {
    case 'approve':
      return { type: 'gate_approved', node, reason, deciders };
    case 'edit':
      return { type: 'gate_edited', node, reason, edits: record.edits ?? {}, deciders };
    case 'respond':
      return {
        type: 'gate_responded',
        node,
        to: record.route_to ?? '',
        response: record.response ?? '',
        reason,
        deciders,
      };
    case 'reject':
      return { type: 'gate_rejected', node, reason, deciders };
    case 'expire':
      return { type: 'gate_expired', node, outcome: record.outcome ?? 'reject', to: record.route_to };
  }
}
