import http from 'node:http';
import https from 'node:https';
import { finished } from 'node:stream/promises';
import { runtimeAddress } from './runtime-address';

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

/** POSTs `body` as JSON and resolves with the answer's head; its body is read by the caller. */
function post(
  url: URL,
  headers: Record<string, string>,
  body: string,
  signal: AbortSignal,
): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const request = (url.protocol === 'https:' ? https : http).request(
      url,
      {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        signal,
      },
      resolve,
    );
    request.on('error', reject);
    request.end(body);
  });
}

/** Reads a whole answer as text (an error's body). */
async function text(res: http.IncomingMessage): Promise<string> {
  res.setEncoding('utf8');
  let whole = '';
  for await (const chunk of res) whole += chunk as string;
  return whole;
}

/**
 * Streams Ollama's `POST /api/chat` (NDJSON, one JSON object per line). Every complete line of a network read is
 * handled in one synchronous pass, so a token costs a JSON.parse and a callback and no promise of its own: at full
 * speed this is what separates the service's token rate from the runtime's (the official client spends two
 * async-generator steps per token). The answer is read from Node's own HTTP client, whose socket reads arrive as
 * plain events: `fetch` passes each read through web streams and a promise or two, which with a thousand streams at
 * once was a tenth of the process's work. A thinking model's reasoning (`message.thinking`) goes to `onThinking`, never
 * into the answer.
 */
export async function streamOllamaChat(
  baseUrl: string,
  request: OllamaChatRequest,
  signal: AbortSignal,
  onToken: (text: string) => void,
  onThinking?: (text: string) => void,
): Promise<OllamaChatResult> {
  const address = runtimeAddress(baseUrl);
  const res = await post(
    new URL('/api/chat', address.url),
    address.headers,
    JSON.stringify({ ...request, stream: true }),
    signal,
  );
  const status = res.statusCode ?? 0;
  if (status < 200 || status > 299) {
    const body = await text(res).then(
      (raw) => JSON.parse(raw) as { error?: string },
      () => null,
    );
    throw new ResponseError(body?.error ?? `${status} ${res.statusMessage ?? ''}`.trim(), status);
  }
  let buffer = '';
  let answer = '';
  const toolCalls: OllamaToolCall[] = [];
  let last: ChatLine | undefined;
  let failure: unknown;
  const lines = (chunk: string) => {
    buffer += chunk;
    let start = 0;
    for (let end = buffer.indexOf('\n'); end >= 0; end = buffer.indexOf('\n', start)) {
      const line = buffer.slice(start, end);
      start = end + 1;
      if (!line.trim()) continue;
      const message = JSON.parse(line) as ChatLine;
      if (message.error) throw new ResponseError(message.error, 500);
      const piece = message.message?.content;
      if (piece) {
        answer += piece;
        onToken(piece);
      }
      const thought = message.message?.thinking;
      if (thought) onThinking?.(thought);
      if (message.message?.tool_calls) toolCalls.push(...message.message.tool_calls);
      if (message.done) last = message;
    }
    buffer = buffer.slice(start);
  };
  res.setEncoding('utf8');
  res.on('data', (chunk: string) => {
    if (failure) return;
    try {
      lines(chunk);
    } catch (error) {
      failure = error;
      res.destroy();
    }
  });
  try {
    await finished(res);
  } catch (error) {
    throw failure ?? error;
  }
  if (failure) throw failure;
  if (!last) throw new ResponseError('the local runtime ended the stream before it was done', 502);
  return {
    text: answer,
    tool_calls: toolCalls,
    done_reason: last.done_reason ?? null,
    prompt_eval_count: last.prompt_eval_count ?? null,
    eval_count: last.eval_count ?? null,
    load_duration: last.load_duration ?? null,
    eval_duration: last.eval_duration ?? null,
  };
}
