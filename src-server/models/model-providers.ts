import { createHash } from 'node:crypto';
import type { Config } from '../config';
import { AIMessage, type AIMessageChunk, HumanMessage, SystemMessage, ToolMessage } from '@langchain/core/messages';
import type { BaseMessage } from '@langchain/core/messages';
import type { ChatMessage, ModelCall, ModelClient, ModelTurn, ToolSpec } from './model-client';
import { cloudModel } from './cloud-providers';
import { trimToBudget } from './context-budget';
import { ContextBudgetError, MalformedToolCallError, ToolsUnsupportedError, describeConnectionError } from './errors';
import type { LocalQueue } from './local-queue';
import { parseModel } from './model-ref';
import { ASSUMED_LOAD_S, callEnded, lastLoadS, modelWindow, needsLoad } from './local-runtime';
import { ResponseError, streamOllamaChat, type OllamaChatRequest, type OllamaMessage } from './ollama-chat';
import { withRetries, type RetryPolicy } from './retries';

/** The first wait before a try again without the provider's Retry-After; doubled at each (models/retries.ts). */
const RETRY_BASE_MS = 500;

/** The call's token callbacks, noting whether any piece reached them: a failure after one is never tried again. */
function streamedTracker(call: ModelCall) {
  let streamed = false;
  return {
    streamed: () => streamed,
    onToken: (text: string) => {
      streamed = true;
      call.onToken(text);
    },
    onThinking: call.onThinking
      ? (text: string) => {
          streamed = true;
          call.onThinking!(text);
        }
      : undefined,
  };
}

/** Ollama's durations are nanoseconds; the service's figures are milliseconds. */
const nsToMs = (ns: number | null) => (ns === null ? null : Math.round(ns / 1e4) / 100);

/** A prompt count this close to num_ctx means the runtime filled the window: it cut the prompt to fit. */
const PROMPT_CUT_MARGIN = 8;

function toolsUnsupported(model: string, how: string): ToolsUnsupportedError {
  return new ToolsUnsupportedError(
    `the local model "${model}" does not support tools (${how}): give this phase a model that calls tools, or no tools`,
  );
}

/** Ollama's messages: a model's turn carries its calls (arguments as an object), a tool's answer names its tool. */
function ollamaMessage(message: ChatMessage): OllamaMessage {
  if (message.role === 'tool') return { role: 'tool', content: message.content, tool_name: message.tool_call?.name };
  if (message.tool_calls?.length) {
    return {
      role: message.role,
      content: message.content,
      tool_calls: message.tool_calls.map((call) => ({ function: { name: call.name, arguments: call.arguments } })),
    };
  }
  return { role: message.role, content: message.content };
}

const ollamaTools = (tools: readonly ToolSpec[]): OllamaChatRequest['tools'] =>
  tools.map((tool) => ({ type: 'function', function: tool }));

/**
 * A call's id as the cloud providers see it. Ours (`<run>:<node>:<visit>:<turn>:<place>`) has colons, which Anthropic
 * refuses in a tool_use id (`^[a-zA-Z0-9_-]+$`), and can be longer than the 64 characters of an OpenAI call_id. Derived
 * from ours alone, so that a call and its answer keep the same id in every later turn, in any process.
 */
const providerCallId = (id: string) => `call_${createHash('sha256').update(id).digest('hex').slice(0, 24)}`;

/** LangChain's messages for the cloud clients, which write each provider's own format for calls and answers. */
function langChainMessage(message: ChatMessage): BaseMessage {
  switch (message.role) {
    case 'system':
      return new SystemMessage(message.content);
    case 'user':
      return new HumanMessage(message.content);
    case 'tool':
      return new ToolMessage({
        content: message.content,
        tool_call_id: providerCallId(message.tool_call!.id),
        // Gemini matches an answer to its call by the tool's name.
        name: message.tool_call!.name,
      });
    case 'assistant': {
      const calls = message.tool_calls ?? [];
      return new AIMessage({
        // A turn of calls alone has no text: no content, as in LangChain's own turns (an empty string would become an
        // empty assistant message of its own in an OpenAI input).
        content: calls.length > 0 && !message.content ? [] : message.content,
        tool_calls: calls.map((call) => ({
          id: providerCallId(call.id),
          name: call.name,
          args: call.arguments,
          type: 'tool_call' as const,
        })),
      });
    }
  }
}

/** Arguments shown in an error, at most this long. */
const SHOWN_ARGUMENTS_CHARS = 200;

/**
 * The tool calls of a streamed cloud turn, their arguments parsed from the JSON text the provider sent (Gemini's
 * object arrives as such a text too). Empty arguments are none; anything but a JSON object fails the call, naming the
 * provider and the tool, rather than running the tool with arguments the model did not write.
 */
function cloudToolCalls(whole: AIMessageChunk | undefined, provider: string): ModelTurn['tool_calls'] {
  return (whole?.tool_call_chunks ?? []).map((chunk) => {
    const name = chunk.name ?? '';
    const text = (chunk.args ?? '').trim();
    let parsed: unknown = {};
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
    }
    if (!name) throw new MalformedToolCallError(`${provider} called a tool without naming it`);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      const shown = text.length > SHOWN_ARGUMENTS_CHARS ? `${text.slice(0, SHOWN_ARGUMENTS_CHARS)}…` : text;
      throw new MalformedToolCallError(
        `${provider} called the tool "${name}" with arguments that are not a JSON object: ${shown}`,
      );
    }
    return { name, arguments: parsed as Record<string, unknown> };
  });
}

/**
 * Every model call of every run. Local calls are trimmed to the context budget and wait for a slot
 * in the queue; they speak Ollama's protocol directly (ollama-chat.ts) rather than through LangChain,
 * whose per-chunk message objects cost more than the rest of the token path together.
 * Cloud calls go straight to their provider through LangChain's clients.
 */
export function createModelProviders(config: Config, queue: Pick<LocalQueue, 'acquire'>): ModelClient {
  const retryPolicy: RetryPolicy = {
    retries: config.MODEL_RETRIES,
    maxWaitS: config.MODEL_RETRY_MAX_WAIT_S,
    baseMs: RETRY_BASE_MS,
  };
  async function streamLocal(call: ModelCall, model: string): Promise<ModelTurn> {
    const base = config.LOCAL_LLM_BASE;
    // Read once per model: the window is constant per model, since a new num_ctx makes the runtime reload it.
    const window = await modelWindow(config, model);
    const tools = call.tools?.length ? call.tools : undefined;
    if (tools && window.tools === false) throw toolsUnsupported(model, 'its /api/show lists no "tools" capability');
    const { messages, report } = trimToBudget(call.messages, window.budget);
    if (report) call.onTrimmed(report);
    if (report && report.estimated_tokens_after > report.budget)
      throw new ContextBudgetError(
        `the system instructions and the run's message alone need about ${report.estimated_tokens_after} tokens, ` +
          (window.lowered
            ? `more than ${model} holds with room for its answer (${report.budget} of its ${window.context_length})`
            : `more than LOCAL_LLM_MAX_CONTEXT_TOKENS (${report.budget}) allows`),
      );
    const cold = await needsLoad(base, model, window.num_ctx);
    const queuedAt = performance.now();
    const release = await queue.acquire({
      signal: call.signal,
      onQueued: call.onQueued,
      label: call.label,
      tenant: call.tenant,
      holder: call.runId,
      loadS: cold ? (lastLoadS(base, model) ?? ASSUMED_LOAD_S) : 0,
    });
    const began = performance.now();
    const queueWaitMs = Math.round(began - queuedAt);
    try {
      // Another call may have loaded it while this one waited.
      if (cold && (await needsLoad(base, model, window.num_ctx))) {
        call.onLoading?.({ model, expected_s: lastLoadS(base, model) });
      }
      const think = config.LOCAL_LLM_THINK;
      const streaming = streamedTracker(call);
      // Within the call's slot: a runtime that restarts (connection refused or reset, 503) is asked again.
      const result = await withRetries(
        retryPolicy,
        call,
        () =>
          streamOllamaChat(
            base,
            {
              model,
              messages: messages.map(ollamaMessage),
              ...(tools ? { tools: ollamaTools(tools) } : {}),
              options: { num_ctx: window.num_ctx, num_predict: window.answer },
              ...(window.thinking && think !== 'runtime' ? { think: think === 'auto' } : {}),
            },
            call.signal,
            streaming.onToken,
            streaming.onThinking,
          ),
        streaming.streamed,
      );
      callEnded(base, model, result.load_duration);
      call.onUsage?.({
        model: call.model,
        queue_wait_ms: queueWaitMs,
        prompt_tokens: result.prompt_eval_count,
        output_tokens: result.eval_count,
        duration_ms: Math.round(performance.now() - began),
        load_ms: nsToMs(result.load_duration),
        generation_ms: nsToMs(result.eval_duration),
        response_model: model,
        finish_reason: result.done_reason,
      });
      // The runtime fits a longer prompt into num_ctx by cutting it from the front; its count then fills the window.
      if (result.prompt_eval_count !== null && result.prompt_eval_count >= window.num_ctx - PROMPT_CUT_MARGIN) {
        call.onWarning?.({
          code: 'prompt_cut',
          message:
            `the runtime counted ${result.prompt_eval_count} prompt tokens, filling the context window of ` +
            `${window.num_ctx}: it cut the prompt from the front (the system instructions go first)`,
        });
      }
      if (result.done_reason === 'length') {
        call.onWarning?.({
          code: 'answer_cut',
          message:
            `the answer stopped at the runtime's length limit after ${result.eval_count ?? '?'} tokens ` +
            `(${window.answer}, from LOCAL_LLM_MAX_ANSWER_TOKENS${window.lowered ? ', lowered for this model' : ''}): ` +
            'it may be incomplete',
        });
      }
      return {
        text: result.text,
        tool_calls: result.tool_calls.map((c) => ({ name: c.function.name, arguments: c.function.arguments ?? {} })),
      };
    } catch (error) {
      call.signal.throwIfAborted();
      // Ollama answers 400 "<model> does not support tools" for a model whose template has no tools.
      if (tools && error instanceof ResponseError && /does not support tools/.test(error.message)) {
        throw toolsUnsupported(model, `the runtime answered: ${error.message}`);
      }
      throw describeConnectionError(error, 'the local model runtime', base);
    } finally {
      // Given back before the run's next call asks: it never waits behind its own last one.
      await release();
    }
  }

  async function streamCloud(
    call: ModelCall,
    provider: 'cloud_a' | 'cloud_b' | 'cloud_c',
    model: string,
  ): Promise<ModelTurn> {
    const chat = cloudModel(config, provider, model);
    const tools = call.tools?.length ? call.tools : undefined;
    // Bound tools make the client send each provider's own function declarations and parse its calls back.
    const runnable = tools
      ? chat.bindTools!(tools.map((tool) => ({ type: 'function' as const, function: tool })))
      : chat;
    const began = performance.now();
    let text = '';
    let whole: AIMessageChunk | undefined;
    let promptTokens: number | null = null;
    let outputTokens: number | null = null;
    let ending: { model: string | null; reason: string | null } = { model: null, reason: null };
    const streaming = streamedTracker(call);
    const attempt = async () => {
      // A try that failed before it streamed anything leaves nothing behind: each starts from nothing.
      text = '';
      whole = undefined;
      promptTokens = outputTokens = null;
      for await (const chunk of await runnable.stream(call.messages.map(langChainMessage), { signal: call.signal })) {
        if (tools) whole = whole ? whole.concat(chunk) : chunk;
        // Usage comes in pieces that add up (Gemini's deltas; Anthropic's prompt at the start), except Anthropic's
        // answer count: message_delta gives the whole count, which LangChain adds to message_start's placeholder.
        const usage = chunk.usage_metadata;
        if (usage) {
          promptTokens = (promptTokens ?? 0) + (usage.input_tokens ?? 0);
          outputTokens =
            provider === 'cloud_b'
              ? Math.max(outputTokens ?? 0, usage.output_tokens ?? 0)
              : (outputTokens ?? 0) + (usage.output_tokens ?? 0);
        }
        ending = endingOf({ ...chunk.additional_kwargs, ...chunk.response_metadata }, ending);
        const piece = chunk.text;
        if (!piece) continue;
        text += piece;
        streaming.onToken(piece);
      }
    };
    try {
      await withRetries(retryPolicy, call, attempt, streaming.streamed);
    } catch (error) {
      call.signal.throwIfAborted();
      throw describeConnectionError(error, `${provider}`, 'its API address');
    }
    call.onUsage?.({
      model: call.model,
      queue_wait_ms: null,
      prompt_tokens: promptTokens,
      output_tokens: outputTokens,
      duration_ms: Math.round(performance.now() - began),
      load_ms: null,
      generation_ms: null,
      response_model: ending.model,
      finish_reason: ending.reason,
    });
    return { text, tool_calls: cloudToolCalls(whole, provider) };
  }

  return {
    stream(call) {
      call.signal.throwIfAborted();
      const { provider, name } = parseModel(call.model);
      return provider === 'local' ? streamLocal(call, name) : streamCloud(call, provider, name);
    },
  };
}

/**
 * The model that answered and why it stopped, from what LangChain's clients put on the chunks (each provider names
 * them its own way: Gemini's `finishReason`, Anthropic's `model` and `stop_reason` in the message's fields, OpenAI's
 * Responses `model` and `status`); the last chunk that names one wins.
 */
function endingOf(
  metadata: Record<string, unknown>,
  before: { model: string | null; reason: string | null },
): { model: string | null; reason: string | null } {
  const text = (value: unknown) => (typeof value === 'string' && value ? value : null);
  return {
    model: text(metadata.model_name) ?? text(metadata.model) ?? before.model,
    reason:
      text(metadata.finish_reason) ??
      text(metadata.stop_reason) ??
      text(metadata.finishReason) ??
      text(metadata.status) ??
      before.reason,
  };
}
