import { STATUS_CODES } from 'node:http';
import { Agent, request as httpRequest } from 'undici';
import { runtimeAddress } from './runtime-address';

/**
 * The local runtime's calls go through undici's own request API on a pool of their own, not through the global
 * `fetch`: a call then builds no Request, Response or web stream, and its answer comes as a Node stream.
 * That is a third to a half of fetch's CPU per call, and a thousand runs at once make three thousand calls
 * (docs/performance.md, "The model call's client"). Connections are kept alive between calls. The pool sets no limit
 * of its own, since the local queue (LOCAL_LLM_MAX_CONCURRENT) bounds the calls in flight.
 */
const runtimePool = new Agent();

/** Named like the official client's error, so stored error texts stay the same: `ResponseError: <runtime's words>`. */
export class ResponseError extends Error {
  override name = 'ResponseError';
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** A message as Ollama's chat takes it: a tool's answer names its tool (`tool_name`), a model's turn its calls. */
export interface OllamaMessage {
  role: string;
  content: string;
  tool_calls?: OllamaToolCall[];
  tool_name?: string;
}

/** Ollama's tool call: the arguments come as an object, and no id comes with it. */
export interface OllamaToolCall {
  function: { name: string; arguments: Record<string, unknown> };
}

export interface OllamaChatRequest {
  model: string;
  messages: OllamaMessage[];
  /** Tools the model may call, in Ollama's (OpenAI-like) function format. */
  tools?: { type: 'function'; function: { name: string; description: string; parameters: Record<string, unknown> } }[];
  /** `num_ctx`: the context window the runtime gives the call; `num_predict`: the most answer tokens. */
  options?: { num_ctx?: number; num_predict?: number };
  /** Ask a thinking model for its reasoning apart (`message.thinking`); absent leaves the runtime's default. */
  think?: boolean;
}

/** What the stream's last line reports, besides the answer. */
export interface OllamaChatResult {
  text: string;
  /** The tools the model called, in its order (a model may spread them over several lines of the stream). */
  tool_calls: OllamaToolCall[];
  /** `stop`, or `length` when the answer reached num_predict (or the context was full). */
  done_reason: string | null;
  prompt_eval_count: number | null;
  eval_count: number | null;
  /** Nanoseconds the runtime spent loading the model for this call (near zero when it was loaded). */
  load_duration: number | null;
  /** Nanoseconds the runtime spent generating the answer (`eval_duration`). */
  eval_duration: number | null;
}

interface ChatLine {
  error?: string;
  done?: boolean;
  done_reason?: string;
  prompt_eval_count?: number;
  eval_count?: number;
  load_duration?: number;
  eval_duration?: number;
  message?: { content?: string; thinking?: string; tool_calls?: OllamaToolCall[] };
}

/**
 * Streams Ollama's `POST /api/chat` (NDJSON, one JSON object per line). Every complete line of a
 * network read is handled in one synchronous pass, so a token costs a JSON.parse and a callback and
 * no promise of its own: at full speed this is what separates the service's token rate from the
 * runtime's (the official client spends two async-generator steps per token). A thinking model's
 * reasoning (`message.thinking`) goes to `onThinking`, never into the answer.
 */
export async function streamOllamaChat(
  baseUrl: string,
  request: OllamaChatRequest,
  signal: AbortSignal,
  onToken: (text: string) => void,
  onThinking?: (text: string) => void,
): Promise<OllamaChatResult> {
  const address = runtimeAddress(baseUrl);
  const res = await httpRequest(new URL('/api/chat', address.url), {
    method: 'POST',
    headers: { ...address.headers, 'content-type': 'application/json' },
    body: JSON.stringify({ ...request, stream: true }),
    signal,
    dispatcher: runtimePool,
  });
  if (res.statusCode < 200 || res.statusCode > 299) {
    const body = (await res.body.json().catch(() => null)) as { error?: string } | null;
    const status = res.statusCode;
    throw new ResponseError(body?.error ?? `${status} ${STATUS_CODES[status] ?? ''}`.trimEnd(), status);
  }
  // A character split across two reads is held until its end comes. Not `res.body.setEncoding()`: read with
  // `for await`, undici's body then decodes each read apart and loses such a character (ollama-chat.test.ts).
  const decoder = new TextDecoder();
  let buffer = '';
  let text = '';
  const toolCalls: OllamaToolCall[] = [];
  let last: ChatLine | undefined;
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    buffer += decoder.decode(chunk, { stream: true });
    let start = 0;
    for (let end = buffer.indexOf('\n'); end >= 0; end = buffer.indexOf('\n', start)) {
      const line = buffer.slice(start, end);
      start = end + 1;
      if (!line.trim()) continue;
      const message = JSON.parse(line) as ChatLine;
      if (message.error) throw new ResponseError(message.error, 500);
      const piece = message.message?.content;
      if (piece) {
        text += piece;
        onToken(piece);
      }
      const thought = message.message?.thinking;
      if (thought) onThinking?.(thought);
      if (message.message?.tool_calls) toolCalls.push(...message.message.tool_calls);
      if (message.done) last = message;
    }
    buffer = buffer.slice(start);
  }
  if (!last) throw new ResponseError('the local runtime ended the stream before it was done', 502);
  return {
    text,
    tool_calls: toolCalls,
    done_reason: last.done_reason ?? null,
    prompt_eval_count: last.prompt_eval_count ?? null,
    eval_count: last.eval_count ?? null,
    load_duration: last.load_duration ?? null,
    eval_duration: last.eval_duration ?? null,
  };
}
