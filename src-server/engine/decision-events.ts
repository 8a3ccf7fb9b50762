import type { RunEvent } from '../contracts/events';
import type { GateDecision, NodeStatus } from '../contracts/runs';
import { decisionPath } from '../contracts/runs';

/** The event a decision at a gate adds to the run's stream: one kind of event per kind of decision. */
export function decisionEvent(
  node: string,
  decision: GateDecision,
  inOriginal?: { run_id: string; edited: boolean },
): RunEvent {
  const { reason, deciders } = decision;
  // A comparison's decision names the run whose decision it took (docs/compare.md).
  const from = inOriginal ? { in_original: inOriginal } : {};
  // `by` stays beside `deciders` for the clients of API 1.1 (a list on approvals, one name on the others).
  switch (decision.kind) {
    case 'expire':
      return { type: 'gate_expired', node, outcome: decision.outcome ?? 'reject', to: decision.to ?? null, ...from };
    case 'respond':
      return {
        type: 'gate_responded',
        node,
        to: decision.to ?? '',
        response: decision.response ?? '',
        reason,
        deciders,
        ...(deciders[0] ? { by: deciders[0] } : {}),
        ...from,
      };
    case 'edit':
      return { type: 'gate_edited', node, reason, edits: decision.edits ?? {}, deciders, by: deciders };
    case 'reject':
      return { type: 'gate_rejected', node, reason, deciders, ...(deciders[0] ? { by: deciders[0] } : {}), ...from };
    case 'approve':
      return { type: 'gate_approved', node, reason, deciders, by: deciders, ...from };
  }
}

/** How a decided gate's node row ends: passed on, stopped, or sent on to another phase (and reached again later). */
export function decidedNodeStatus(decision: GateDecision): NodeStatus {
  const path = decisionPath(decision);
  return path === 'route' ? 'completed' : path === 'approve' ? 'approved' : 'rejected';
}
