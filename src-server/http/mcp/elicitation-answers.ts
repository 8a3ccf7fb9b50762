import type { JSONRPCErrorResponse, JSONRPCResultResponse } from '@modelcontextprotocol/sdk/types.js';
import type { Principal } from '../../auth/principal';
import { errorMessage, ServiceError } from '../../contracts/errors';
import type { McpElicitation } from '../../storage/mcp-sessions';
import { getLogger } from '../../log';
import { decisionOf, readAnswer, type FormAnswer } from './elicitation-form';
import type { StopRef } from '../../services/approvals.service';
import type { McpServices } from './mcp-call';

const log = getLogger('svc.api');

/** The ids of the questions this server asks, as it sends them in `elicitation/create`. */
export const isQuestionId = (id: unknown): id is string => typeof id === 'string' && id.startsWith('elicit-');

/**
 * A person's answer to a question asked inside a call, on whichever process it arrives: taken once (the row's
 * state), decided through the approvals service as this person (the same rules as the HTTP API's decisions), and
 * the outcome written for the call that waits on it.
 */
/** Decides as the answer says, at the stop and round the question showed; a string says why it is no decision. */
async function decide(
  approvals: McpServices['approvals'],
  principal: Principal,
  question: McpElicitation,
  answer: FormAnswer,
): Promise<string | undefined> {
  const decision = decisionOf(answer, { toolCall: question.call_id !== null, contextNode: question.context_node });
  if (typeof decision === 'string') return decision;
  // A question asked by a process of the release before carries no stop: its thread and gate or call name it.
  const ref: StopRef = question.stop_id
    ? { stop: question.stop_id, round: question.round }
    : question.call_id
      ? { thread: question.thread_id, toolCall: question.call_id }
      : { thread: question.thread_id, gate: question.gate };
  await approvals.decide(principal, ref, decision);
  return undefined;
}

export async function takeAnswer(
  services: McpServices,
  principal: Principal,
  sessionId: string,
  message: JSONRPCResultResponse | JSONRPCErrorResponse,
): Promise<void> {
  const { sessions, approvals } = services;
  const question = await sessions.take(String(message.id), sessionId);
  if (!question) {
    log.info(`an answer to question ${String(message.id)} came after it was answered, withdrawn or expired: ignored`);
    return;
  }
  const result = 'result' in message ? (message.result as { action?: unknown; content?: unknown }) : undefined;
  if (result?.action !== 'accept') {
    await sessions.settle(question.id, 'declined', null);
    return;
  }
  const answer = readAnswer(result.content);
  if (typeof answer === 'string') {
    await sessions.settle(question.id, 'failed', answer);
    return;
  }
  try {
    const refused = await decide(approvals, principal, question, answer);
    if (refused) {
      await sessions.settle(question.id, 'failed', refused);
      return;
    }
    await sessions.settle(question.id, 'decided', null);
  } catch (error) {
    if (!(error instanceof ServiceError)) log.error(`taking the answer to question ${question.id} failed`, error);
    await sessions.settle(question.id, 'failed', error instanceof ServiceError ? error.message : errorMessage(error));
  }
}
