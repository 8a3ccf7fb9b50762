import { humanMessageId, phaseMessageId } from './lg-ids';

/** A message as LangChain serialises it for these clients. */
export interface LgMessage {
  type: 'human' | 'ai';
  id: string;
  content: string;
  name?: string;
}

/**
 * A run's messages: its message as the human's, then each phase's output as an ai message named after the phase. The
 * ids depend only on the run and the phase, so the stream's chunks, its values, the thread's state and its history
 * name the same message alike (a phase that runs again keeps its id, with its new text).
 */
export function runMessages(
  runId: string,
  message: string | null,
  outputs: Iterable<readonly [string, string]>,
): LgMessage[] {
  const messages: LgMessage[] = [];
  if (message) messages.push({ type: 'human', id: humanMessageId(runId), content: message });
  for (const [node, output] of outputs) {
    if (output) messages.push({ type: 'ai', id: phaseMessageId(runId, node), name: node, content: output });
  }
  return messages;
}

/** The thread's values: its messages and the latest output of each phase. */
export function threadValues(messages: LgMessage[], outputs: Record<string, string>): Record<string, unknown> {
  return { messages, outputs };
}
