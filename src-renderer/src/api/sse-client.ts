import { RunEventSchema, type RunEvent } from '@contracts/events';
import { headers, raise } from './http';

export interface StreamedEvent {
  /** The per-run sequence number (`id:`), what `Last-Event-ID` resumes after. */
  id: number;
  event: RunEvent;
}

export type EventHandler = (e: StreamedEvent) => void;

/** The server sent something the shared event union does not describe: studio and server disagree. */
export class StreamProtocolError extends Error {}

/**
 * Opens a run stream with fetch (EventSource cannot POST or send a bearer token), parses SSE frames
 * and checks each event against the shared union. Resolves when the server ends the stream, or answers
 * 204 (the client has every event the run will send until someone acts on it); abort it with `signal`.
 */
export async function openEventStream(
  path: string,
  init: { method?: string; body?: unknown; lastEventId?: number; signal: AbortSignal },
  onEvent: EventHandler,
): Promise<void> {
  const res = await fetch(path, {
    method: init.method ?? 'GET',
    headers: headers({
      accept: 'text/event-stream',
      ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(init.lastEventId ? { 'last-event-id': String(init.lastEventId) } : {}),
    }),
    body: init.body !== undefined ? JSON.stringify(init.body) : undefined,
    signal: init.signal,
  });
  if (!res.ok) await raise(res);
  if (res.status === 204) return;
  if (!res.body) throw new StreamProtocolError('the run stream has no body');
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    // Line ends become \n; a \r that ends this read waits for the next, which may start with its \n.
    buffer += value;
    const pendingCr = buffer.endsWith('\r');
    buffer = (pendingCr ? buffer.slice(0, -1) : buffer).replace(/\r\n?/g, '\n') + (pendingCr ? '\r' : '');
    let boundary: number;
    while ((boundary = buffer.indexOf('\n\n')) >= 0) {
      const frame = parseFrame(buffer.slice(0, boundary));
      buffer = buffer.slice(boundary + 2);
      if (frame) onEvent(frame);
    }
  }
}

/** One SSE frame: comment lines (keep-alives) are skipped, `data:` lines are joined as the spec says. */
export function parseFrame(frame: string): StreamedEvent | null {
  let id = 0;
  const data: string[] = [];
  for (const line of frame.split('\n')) {
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'id') id = Number(value);
    else if (field === 'data') data.push(value);
  }
  if (data.length === 0) return null;
  let json: unknown;
  try {
    json = JSON.parse(data.join('\n'));
  } catch {
    throw new StreamProtocolError(`the run stream sent data that is not JSON: ${data.join('\n').slice(0, 200)}`);
  }
  const parsed = RunEventSchema.safeParse(json);
  if (!parsed.success) throw new StreamProtocolError(`the run stream sent an unknown event: ${parsed.error.message}`);
  return { id, event: parsed.data };
}
