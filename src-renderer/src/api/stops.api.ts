import { RunAcceptedSchema } from '@contracts/runs';
import type { Stop, StopDecisionBody } from '@contracts/stops';
import { QuestionAnsweredSchema, type AnswerQuestionBody } from '@contracts/tool-questions';
import { api } from './http';

/**
 * What a person decides at a gate: go on, go on with the gated texts changed (node id → new text), send the phase
 * before the gate back to work with feedback, or stop. The reason is optional and kept with the decision.
 */
export type DecisionChoice =
  | { kind: 'approve'; reason?: string }
  | { kind: 'edit'; edits: Record<string, string>; reason?: string }
  | { kind: 'respond'; response: string; reason?: string }
  | { kind: 'reject'; reason?: string };

/**
 * What a person decides on a tool call a run waits at: run it (with the arguments edited, when `arguments` is given;
 * and for the rest of the thread without asking, with `allowForThread`), answer in the tool's place, or refuse it.
 * The reason is optional; a rejection's reason goes back to the model.
 */
export type ToolDecisionChoice =
  | { kind: 'approve'; arguments?: Record<string, unknown>; allowForThread?: boolean; reason?: string }
  | { kind: 'respond'; response: string; reason?: string }
  | { kind: 'reject'; reason?: string };

/**
 * The one request every decision is sent as, at a gate or on a tool call, naming the round the person was shown;
 * an empty reason is left out rather than recorded as one.
 */
export function stopDecisionBody(choice: DecisionChoice | ToolDecisionChoice, round: number): StopDecisionBody {
  const reason = choice.reason?.trim() ? { reason: choice.reason.trim() } : {};
  switch (choice.kind) {
    case 'approve':
      return {
        decision: 'approve',
        round,
        ...reason,
        ...('arguments' in choice && choice.arguments ? { arguments: choice.arguments } : {}),
        ...('allowForThread' in choice && choice.allowForThread ? { allow_for_thread: true } : {}),
      };
    case 'edit':
      return { decision: 'approve', round, ...reason, edits: choice.edits };
    case 'respond':
      return { decision: 'respond', round, ...reason, response: choice.response };
    case 'reject':
      return { decision: 'reject', round, ...reason };
  }
}

export const stopsApi = {
  /**
   * One person's decision at the stop as she was shown it (its round). The answer says where to follow the run from,
   * or, when the stop needs more approvals than this one, the approvals so far (the run keeps waiting). A stop edited
   * by another approver since answers 409.
   */
  decide: (stop: Stop, choice: DecisionChoice | ToolDecisionChoice) =>
    api(`/stops/${encodeURIComponent(stop.id)}/decision`, {
      method: 'POST',
      body: stopDecisionBody(choice, stop.round),
      schema: RunAcceptedSchema,
    }),
  /**
   * The answer to a tool server's question (a stop of kind `question`): the fields it asked for, a page done, declined
   * or dismissed. The server goes on with the call; the run has kept running meanwhile, so nothing is resumed. Fields
   * that do not fit the question answer 400 with which; a question answered, expired or withdrawn answers 409.
   */
  answer: (stopId: string, body: AnswerQuestionBody) =>
    api(`/stops/${encodeURIComponent(stopId)}/answer`, { method: 'POST', body, schema: QuestionAnsweredSchema }),
};
