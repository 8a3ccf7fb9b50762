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
    buffer += value;
    // Line ends become \n; a \r that ends this read waits for the next, which may start with its \n. (This server
    // writes \n alone: the buffer is only scanned for it.)
    if (buffer.includes('\r')) {
      const pendingCr = buffer.endsWith('\r');
      buffer = (pendingCr ? buffer.slice(0, -1) : buffer).replace(/\r\n?/g, '\n') + (pendingCr ? '\r' : '');
    }
    // A read holds hundreds of frames at a fast model's pace: the buffer is cut once, after the last whole one.
    let start = 0;
    let boundary: number;
    while ((boundary = buffer.indexOf('\n\n', start)) >= 0) {
      const frame = parseFrame(buffer.slice(start, boundary));
      start = boundary + 2;
      if (frame) onEvent(frame);
    }
    buffer = buffer.slice(start);
  }
}

/** One SSE frame: comment lines (keep-alives) are skipped, `data:` lines are joined as the spec says. */
export function parseFrame(frame: string): StreamedEvent | null {
  let id = 0;
  let data: string | null = null;
  for (let start = 0; start <= frame.length;) {
    let end = frame.indexOf('\n', start);
    if (end < 0) end = frame.length;
    const line = frame.slice(start, end);
    start = end + 1;
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const raw = colon < 0 ? '' : line.slice(colon + 1);
    const value = raw.startsWith(' ') ? raw.slice(1) : raw;
    if (field === 'id') id = Number(value);
    else if (field === 'data') data = data === null ? value : `${data}\n${value}`;
  }
  if (data === null) return null;
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    throw new StreamProtocolError(`the run stream sent data that is not JSON: ${data.slice(0, 200)}`);
  }
  const parsed = RunEventSchema.safeParse(json);
  if (!parsed.success) throw new StreamProtocolError(`the run stream sent an unknown event: ${parsed.error.message}`);
  return { id, event: parsed.data };
}
