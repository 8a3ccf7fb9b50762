import type { CallToolResult, InputRequiredResult, ServerContext } from '@modelcontextprotocol/server';
import type { z } from 'zod';
import { ServiceError } from '../../../contracts/errors';
import type { RunDetail } from '../../../contracts/runs';
import { decisionOf, questionFor, readAnswer } from '../elicitation-form';
import type { McpServices } from '../mcp-call';
import type { RunAgentInput } from '../mcp-schemas';
import { runResult } from '../run-results';
import { startRun, type ToolCaller } from '../common-tools';
import { toolAnswer } from '../tool-answer';
import type { ModernSdk } from './modern-sdk';
import { CLIENT_CAPABILITIES_KEY, MODERN_REVISION } from './modern-sdk';

/** What a question carries to the next round, signed (the client can read it, not change it): the stop it asked at. */
export interface AskedAt {
  run_id: string;
  stop_id: string;
  round: number;
  tool_call: boolean;
  context_node: string | null;
}

/** The key of the one input request run_agent makes: the decision at the stop. */
const DECISION = 'decision';
/** How long one round follows its run before it answers what it has (a run is bounded by RUN_TIMEOUT_S). */
const FOLLOW_S = 900;
/** While a decision just taken has not moved the run yet, how often the round looks again, and how long at most. */
const SETTLE_MS = 100;
const SETTLE_LIMIT_MS = 10_000;

/** Whether the request's client declared that it takes form questions (2026-07-28 carries it in every request). */
function takesForms(ctx: ServerContext): boolean {
  const envelope = (ctx.mcpReq.envelope ?? {}) as Record<string, unknown>;
  const capabilities = (envelope[CLIENT_CAPABILITIES_KEY] ?? {}) as { elicitation?: Record<string, unknown> };
  const elicitation = capabilities.elicitation;
  return Boolean(elicitation) && (Object.keys(elicitation!).length === 0 || 'form' in elicitation!);
}

/**
 * run_agent for a 2026-07-28 request (docs/mcp.md#protocol-versions): nothing waits inside a call. The first round
 * starts the run and follows it; where it stops for a person whom the caller may stand for, the call answers
 * `input_required` with the same question a 2025-11-25 session is asked, and the stop in its signed request state.
 * The client asks the person and sends the call again with her answer, on whichever process: that round decides
 * through the approvals service as the caller, then follows the run on to its end or its next stop.
 */
export function modernRunAgent(sdk: ModernSdk, services: McpServices, caller: ToolCaller, mint: Mint) {
  const { runsService, approvals } = services;
  const { principal, baseUrl } = caller;

  /** The run after a decision: followed until it ends or stops again (not at the stop just answered). */
  async function settled(runId: string, answered: AskedAt | undefined, signal: AbortSignal): Promise<RunDetail> {
    const deadline = Date.now() + SETTLE_LIMIT_MS;
    for (;;) {
      const detail = await runsService.waitFor(principal, runId, FOLLOW_S, signal);
      const same = answered && detail.stop?.id === answered.stop_id && detail.stop.round === answered.round;
      if (!same || detail.status !== 'waiting_approval' || Date.now() > deadline || signal.aborted) return detail;
      await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    }
  }

  /** Why the caller is not asked at the run's stop; undefined when she is. */
  async function whyNotAsked(run: RunDetail, ctx: ServerContext): Promise<string | undefined> {
    const gate = run.pending_gate!;
    if (!takesForms(ctx)) {
      return 'this MCP client cannot be asked questions (it did not declare elicitation): decide with decide_approval or in the studio';
    }
    if (!(await approvals.mayDecide(principal, run.thread_id))) {
      const role = gate.decide_role ?? 'member';
      const others = (gate.approvals_needed ?? 1) > 1 ? ' and approvals from other people' : '';
      return `you cannot decide it here: it needs the ${role} role on the project${others}`;
    }
    return undefined;
  }

  /** Takes the person's answer to the question of the round before: undefined once decided, else why not. */
  async function take(asked: AskedAt, ctx: ServerContext): Promise<string | undefined> {
    const view = sdk.inputResponse(ctx.mcpReq.inputResponses, DECISION);
    if (view.kind !== 'elicit') return 'no answer to the question came back; the run still waits';
    if (view.action !== 'accept') return 'the question was declined in the client; the run still waits';
    const answer = readAnswer(view.content);
    if (typeof answer === 'string') return `the answer could not be taken: ${answer}`;
    const decision = decisionOf(answer, { toolCall: asked.tool_call, contextNode: asked.context_node });
    if (typeof decision === 'string') return `the answer could not be taken: ${decision}`;
    try {
      await approvals.decide(principal, { stop: asked.stop_id, round: asked.round }, decision);
      return undefined;
    } catch (error) {
      if (error instanceof ServiceError) return `the answer could not be taken: ${error.message}`;
      throw error;
    }
  }

  return async (
    input: z.infer<typeof RunAgentInput>,
    ctx: ServerContext,
  ): Promise<CallToolResult | InputRequiredResult> => {
    const asked = ctx.mcpReq.requestState<AskedAt>();
    let question: InputRequiredResult | undefined;
    const answer = await toolAnswer(async () => {
      let why: string | undefined;
      let runId: string;
      if (asked) {
        runId = asked.run_id;
        why = await take(asked, ctx);
        if (why) return runResult(await runsService.runDetail(principal, runId), baseUrl, why);
      } else {
        runId = (await startRun(services, principal, input)).runId;
      }
      const run = await settled(runId, asked, ctx.mcpReq.signal);
      if (run.status !== 'waiting_approval' || !run.pending_gate || !run.stop) return runResult(run, baseUrl);
      why = await whyNotAsked(run, ctx);
      if (why) return runResult(run, baseUrl, why);
      const form = questionFor(run.agent, run.pending_gate, MODERN_REVISION);
      const state: AskedAt = {
        run_id: run.id,
        stop_id: run.stop.id,
        round: run.stop.round,
        tool_call: Boolean(run.pending_gate.tool_call),
        context_node: form.contextNode,
      };
      question = sdk.inputRequired({
        inputRequests: {
          [DECISION]: sdk.inputRequired.elicit({
            message: form.message,
            // The 2025-11-25 form, which the SDK types field by field: built and tested in elicitation-form.ts.
            requestedSchema: form.requestedSchema as Elicit['requestedSchema'],
          }),
        },
        requestState: await mint(state, ctx),
      });
      return {};
    });
    return question ?? (answer as CallToolResult);
  };
}

type Elicit = Parameters<ModernSdk['inputRequired']['elicit']>[0];

export type Mint = (state: AskedAt, ctx: ServerContext) => Promise<string>;
