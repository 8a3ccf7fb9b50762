import type { CatalogEntry } from '../assets/catalog';
import type { RunEvent } from '../contracts/events';
import type { RunNode } from '../contracts/runs';
import type { StoredRun } from '../db/runs.repository';
import { LoggedEvent } from './run-session';

/**
 * The stream of a run that no process is executing any more, rebuilt from its stored rows: each
 * node's output arrives as one token event. Used to re-attach to a finished (or paused) run.
 */
export function replayEvents(run: StoredRun, nodes: RunNode[], entry: CatalogEntry | undefined): LoggedEvent[] {
  const events: RunEvent[] = [
    { type: 'run_start', run_id: run.id, thread_id: run.thread_id, agent: run.agent, model: run.model ?? '' },
  ];
  const gates = new Set(entry?.layout.nodes.filter((n) => n.kind === 'gate').map((n) => n.id));
  const routes = [...run.routes];
  for (const node of nodes) {
    events.push({ type: 'node_enter', node: node.node_id });
    if (gates.has(node.node_id)) {
      if (node.status === 'approved') events.push({ type: 'gate_approved', node: node.node_id, reason: null });
      if (node.status === 'rejected') events.push({ type: 'gate_rejected', node: node.node_id, reason: null });
      continue;
    }
    if (node.output) events.push({ type: 'token', node: node.node_id, text: node.output });
    if (node.exited_at !== null) events.push({ type: 'node_exit', node: node.node_id, status: node.status });
    while (routes[0]?.from === node.node_id) {
      const route = routes.shift()!;
      events.push({ type: 'route_matched', from: route.from, to: route.to, rule: route.rule });
    }
  }
  switch (run.status) {
    case 'completed':
      events.push({ type: 'run_done', run_id: run.id, output: run.output ?? '' });
      break;
    case 'rejected':
      events.push({ type: 'run_rejected', run_id: run.id, reason: null });
      break;
    case 'error':
      events.push({ type: 'run_error', run_id: run.id, error_detail: run.error_detail ?? '' });
      break;
    case 'cancelled':
      events.push({ type: 'run_cancelled', run_id: run.id, reason: null });
      break;
    case 'waiting_approval':
      if (run.pending_gate) events.push({ type: 'gate_waiting', ...run.pending_gate });
      break;
    case 'running':
      // Executed by another process, or orphaned: the replay ends with what is stored so far.
      break;
  }
  return events.map((event, index) => new LoggedEvent(index + 1, event));
}
