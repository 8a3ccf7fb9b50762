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

export interface OllamaChatRequest {
  model: string;
  messages: { role: string; content: string }[];
}

/**
 * Streams Ollama's `POST /api/chat` (NDJSON, one JSON object per line). Every complete line of a
 * network read is handled in one synchronous pass, so a token costs a JSON.parse and a callback and
 * no promise of its own: at full speed this is what separates the service's token rate from the
 * runtime's (the official client spends two async-generator steps per token).
 */
export async function streamOllamaChat(
  baseUrl: string,
  request: OllamaChatRequest,
  signal: AbortSignal,
  onToken: (text: string) => void,
): Promise<string> {
  const address = runtimeAddress(baseUrl);
  const res = await fetch(new URL('/api/chat', address.url), {
    method: 'POST',
    headers: { ...address.headers, 'content-type': 'application/json' },
    body: JSON.stringify({ ...request, stream: true }),
    signal,
  });
  if (!res.ok) {
    const body = (await res.json().catch(() => null)) as { error?: string } | null;
    throw new ResponseError(body?.error ?? `${res.status} ${res.statusText}`, res.status);
  }
  const decoder = new TextDecoder();
  let buffer = '';
  let text = '';
  let done = false;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let start = 0;
    for (let end = buffer.indexOf('\n'); end >= 0; end = buffer.indexOf('\n', start)) {
      const line = buffer.slice(start, end);
      start = end + 1;
      if (!line.trim()) continue;
      const message = JSON.parse(line) as { error?: string; done?: boolean; message?: { content?: string } };
      if (message.error) throw new ResponseError(message.error, 500);
      const piece = message.message?.content;
      if (piece) {
        text += piece;
        onToken(piece);
      }
      if (message.done) done = true;
    }
    buffer = buffer.slice(start);
  }
  if (!done) throw new ResponseError('the local runtime ended the stream before it was done', 502);
  return text;
}
