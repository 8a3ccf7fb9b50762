import {
  context,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import { errorMessage } from '../contracts/errors';
import { parseModel } from '../models/model-ref';
import type { CallUsage, ModelCall, ModelClient, ModelTurn } from '../models/model-client';
import { contextOf, tracer, traceparentOf } from './trace-context';
import { ERROR_TYPE, GEN_AI, GEN_AI_OPERATION, PROVIDER_NAMES, SVC } from './gen-ai';

/**
 * A run's trace, written by hand (docs/observability.md#traces): the run is one trace from its request to its end,
 * whichever processes execute its legs and however long it waits for people. Its context is a W3C `traceparent`
 * stored with the run; every leg, and every wait at a stop, is a child of it.
 */

/**
 * The root of a new run's trace: a short span for its acceptance, a child of the request's `traceparent` when it
 * sent one. Returns what to store with the run (null while tracing is off).
 */
export function startRunTrace(
  run: { id: string; threadId: string; projectId: string; agent: string; agentVersion: string },
  incoming: string | undefined,
): string | null {
  const span = tracer().startSpan(
    `run ${run.agent}`,
    {
      kind: SpanKind.SERVER,
      attributes: {
        [GEN_AI.AGENT_NAME]: run.agent,
        [SVC.AGENT_VERSION]: run.agentVersion,
        [GEN_AI.CONVERSATION_ID]: run.threadId,
        [SVC.RUN_ID]: run.id,
        [SVC.PROJECT_ID]: run.projectId,
      },
    },
    contextOf(incoming),
  );
  const stored = traceparentOf(trace.setSpan(ROOT_CONTEXT, span));
  span.end();
  return stored;
}

/** A stop a run waited at, once decided: a gate, or a tool call whose policy asks. */
export interface WaitAtStop {
  runId: string;
  traceContext: string | null;
  kind: 'gate' | 'tool_call';
  node: string;
  /** When the run stopped there, as the database kept it. */
  since: Date;
  /** What settled it: approve, edit, respond, reject, expire. */
  decision: string;
  /** The tool of a tool call. */
  tool?: string;
}

/** The time a run waited for people, as a span of its own in the run's trace, written when the decision comes. */
export function recordWait(wait: WaitAtStop, decidedAt = new Date()): void {
  const span = tracer().startSpan(
    wait.kind === 'gate' ? `wait gate ${wait.node}` : `wait tool_call ${wait.tool ?? wait.node}`,
    {
      startTime: wait.since,
      attributes: {
        [SVC.RUN_ID]: wait.runId,
        [SVC.STOP_KIND]: wait.kind,
        [SVC.STOP_NODE]: wait.node,
        [SVC.DECISION]: wait.decision,
        ...(wait.tool ? { [GEN_AI.TOOL_NAME]: wait.tool } : {}),
      },
    },
    contextOf(wait.traceContext),
  );
  span.end(decidedAt);
}

/** What a leg's trace needs of its run. */
export interface TracedRun {
  id: string;
  threadId: string;
  projectId: string;
  agent: string;
  agentVersion: string | null;
  model: string;
  attempts: number;
  traceContext: string | null;
}

/**
 * One leg of a run: a span (`invoke_agent <agent>`) for the leg, a child span per phase it runs, and in each phase a
 * span per model call (`chat <model>`) and per tool call (`execute_tool <tool>`). A run's phases run one at a time,
 * so the phase open is the parent of the calls made meanwhile.
 */
export class LegTrace {
  private readonly leg: Span;
  private readonly legContext: Context;
  private phase: { span: Span; context: Context } | undefined;

  constructor(
    private readonly run: TracedRun,
    private readonly captureContent: boolean,
  ) {
    this.leg = tracer().startSpan(
      `${GEN_AI_OPERATION.INVOKE_AGENT} ${run.agent}`,
      {
        attributes: {
          [GEN_AI.OPERATION_NAME]: GEN_AI_OPERATION.INVOKE_AGENT,
          [GEN_AI.AGENT_NAME]: run.agent,
          ...(run.agentVersion ? { [SVC.AGENT_VERSION]: run.agentVersion } : {}),
          [GEN_AI.CONVERSATION_ID]: run.threadId,
          [GEN_AI.REQUEST_MODEL]: run.model,
          [SVC.RUN_ID]: run.id,
          [SVC.RUN_ATTEMPT]: run.attempts,
          [SVC.PROJECT_ID]: run.projectId,
        },
      },
      contextOf(run.traceContext),
    );
    this.legContext = trace.setSpan(contextOf(run.traceContext), this.leg);
  }

  /** How the leg began (start, branch, resume, continue, give_up). */
  planned(plan: string): void {
    this.leg.setAttribute(SVC.LEG_PLAN, plan);
  }

  phaseEntered(node: string, visit: number): void {
    this.phaseEnded('superseded');
    const span = tracer().startSpan(
      `phase ${node}`,
      { attributes: { [SVC.PHASE]: node, [SVC.PHASE_VISIT]: visit, [SVC.RUN_ID]: this.run.id } },
      this.legContext,
    );
    this.phase = { span, context: trace.setSpan(this.legContext, span) };
  }

  /** The phase open ends: its status, as its node row records it. */
  phaseEnded(status: string): void {
    if (!this.phase) return;
    this.phase.span.setAttribute(SVC.PHASE_STATUS, status);
    if (status === 'error') this.phase.span.setStatus({ code: SpanStatusCode.ERROR });
    this.phase.span.end();
    this.phase = undefined;
  }

  private get current(): Context {
    return this.phase?.context ?? this.legContext;
  }

  /** The model client, with each call a span of the phase open (its attributes from the call's own report). */
  models(client: ModelClient): ModelClient {
    return { stream: (call) => this.modelCall(call, client) };
  }

  private async modelCall(call: ModelCall, client: ModelClient): Promise<ModelTurn> {
    const provider = parseModel(call.model).provider;
    const attributes: Attributes = {
      [GEN_AI.OPERATION_NAME]: GEN_AI_OPERATION.CHAT,
      [GEN_AI.PROVIDER_NAME]: PROVIDER_NAMES[provider],
      [GEN_AI.REQUEST_MODEL]: call.model,
    };
    if (this.captureContent) {
      attributes[GEN_AI.INPUT_MESSAGES] = JSON.stringify(
        call.messages.map((m) => ({ role: m.role, parts: [{ type: 'text', content: m.content }] })),
      );
    }
    const span = tracer().startSpan(
      `${GEN_AI_OPERATION.CHAT} ${call.model}`,
      { kind: SpanKind.CLIENT, attributes },
      this.current,
    );
    let usage: CallUsage | undefined;
    const observed: ModelCall = {
      ...call,
      onUsage: (reported) => {
        usage = reported;
        call.onUsage?.(reported);
      },
    };
    try {
      const turn = await context.with(trace.setSpan(this.current, span), () => client.stream(observed));
      if (this.captureContent) {
        span.setAttribute(
          GEN_AI.OUTPUT_MESSAGES,
          JSON.stringify([{ role: 'assistant', parts: [{ type: 'text', content: turn.text }] }]),
        );
      }
      return turn;
    } catch (error) {
      failed(span, error);
      throw error;
    } finally {
      if (usage) usageAttributes(span, usage);
      span.end();
    }
  }

  /** A tool call, run inside its span: a child of the phase that made it. */
  async toolCall<T extends { is_error: boolean; text: string }>(
    tool: { name: string; policy: string },
    callId: string,
    work: () => Promise<T>,
  ): Promise<T> {
    const span = tracer().startSpan(
      `${GEN_AI_OPERATION.EXECUTE_TOOL} ${tool.name}`,
      {
        attributes: {
          [GEN_AI.OPERATION_NAME]: GEN_AI_OPERATION.EXECUTE_TOOL,
          [GEN_AI.TOOL_NAME]: tool.name,
          [GEN_AI.TOOL_CALL_ID]: callId,
          [GEN_AI.TOOL_TYPE]: 'extension',
          [SVC.TOOL_POLICY]: tool.policy,
        },
      },
      this.current,
    );
    try {
      const result = await context.with(trace.setSpan(this.current, span), work);
      if (result.is_error) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: 'the tool answered an error' });
        span.setAttribute(ERROR_TYPE, 'tool_error');
      }
      return result;
    } catch (error) {
      failed(span, error);
      throw error;
    } finally {
      span.end();
    }
  }

  /** The leg ends: how (completed, paused, rejected, error, cancelled, lost, …). */
  end(outcome: string, error?: unknown): void {
    this.phaseEnded(outcome === 'paused' ? 'waiting_approval' : outcome);
    this.leg.setAttribute(SVC.LEG_OUTCOME, outcome);
    if (error !== undefined && outcome === 'error') failed(this.leg, error);
    this.leg.end();
  }
}

function usageAttributes(span: Span, usage: CallUsage): void {
  if (usage.response_model) span.setAttribute(GEN_AI.RESPONSE_MODEL, usage.response_model);
  if (usage.finish_reason) span.setAttribute(GEN_AI.RESPONSE_FINISH_REASONS, [usage.finish_reason]);
  if (usage.prompt_tokens !== null) span.setAttribute(GEN_AI.USAGE_INPUT_TOKENS, usage.prompt_tokens);
  if (usage.output_tokens !== null) span.setAttribute(GEN_AI.USAGE_OUTPUT_TOKENS, usage.output_tokens);
  if (usage.queue_wait_ms !== null) span.setAttribute(SVC.QUEUE_WAIT_MS, usage.queue_wait_ms);
}

export function failed(span: Span, error: unknown): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: errorMessage(error) });
  span.setAttribute(ERROR_TYPE, error instanceof Error ? error.name : 'Error');
}
