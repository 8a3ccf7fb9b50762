import type { RunEvent } from '@contracts/events';
import type { NodeWarning } from '@contracts/runs';

/** The runtime loads the model before a phase can answer (a cold start). */
export interface ModelLoading {
  node: string;
  model: string;
  /** How long the last load of this model took, when the server has seen one. */
  expectedS: number | null;
}

/** A phase's model call failed before it streamed anything and is tried again (`retrying (2/4)`). */
export interface ModelRetry {
  node: string;
  retry: number;
  retries: number;
  waitS: number;
  reason: string;
}

/** The parts of the run view this module keeps. */
interface RuntimeView {
  transcript: { node: string; text: string; thinking?: string; toolCall?: unknown }[];
  warnings: string[];
  loading: ModelLoading | null;
  retrying: ModelRetry | null;
}

/** A node warning as the studio's warning banner words it. */
export function warningText(node: string, warning: NodeWarning): string {
  const what =
    warning.code === 'answer_cut'
      ? 'Answer cut'
      : warning.code === 'prompt_cut'
        ? 'Prompt cut by the runtime'
        : 'Warning';
  return `${what} for ${node}: ${warning.message}.`;
}

/**
 * Appends a piece of reasoning to the node's transcript entry (the one its answer streams into); reasoning after a
 * tool call starts the entry of the answer that follows the call.
 */
function appendThinking(view: RuntimeView, node: string, text: string): void {
  const last = view.transcript.at(-1);
  if (last && last.node === node && !last.toolCall) last.thinking = (last.thinking ?? '') + text;
  else view.transcript.push({ node, text: '', thinking: text });
}

/**
 * The events of the local runtime: reasoning (kept with the phase's transcript entry, apart from its answer), cold
 * starts (the loading state lasts until the phase's first reasoning or answer, or its end) and node warnings.
 */
export function applyRuntimeEvent(view: RuntimeView, event: RunEvent): void {
  switch (event.type) {
    case 'model_loading':
      view.loading = { node: event.node, model: event.model, expectedS: event.expected_s };
      return;
    case 'model_retry':
      view.retrying = {
        node: event.node,
        retry: event.retry,
        retries: event.retries,
        waitS: event.wait_s,
        reason: event.reason,
      };
      return;
    case 'thinking':
      view.loading = null;
      view.retrying = null;
      appendThinking(view, event.node, event.text);
      return;
    case 'node_warning':
      view.warnings.push(warningText(event.node, event));
      return;
    case 'token':
    case 'node_exit':
    case 'run_done':
    case 'run_error':
    case 'run_cancelled':
    case 'run_rejected':
    case 'run_resumed':
      view.loading = null;
      view.retrying = null;
      return;
    default:
      return;
  }
}
