import { RunEventSchema, type RunEvent } from '@contracts/events';
import { headers, raise } from './http';

export interface StreamedEvent {
  id: number;
  event: RunEvent;
}

/**
 * Opens a run stream with fetch (EventSource cannot POST or send a bearer token), parses SSE frames
 * and checks each event against the shared union. Resolves when the stream ends; abort it with `signal`.
 */
export async function streamRun(
  path: string,
  init: { method?: string; body?: unknown; lastEventId?: number; signal: AbortSignal },
  onEvent: (e: StreamedEvent) => void,
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
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let boundary: number;
    while ((boundary = buffer.indexOf('\n\n')) >= 0) {
      const frame = buffer.slice(0, boundary);
      buffer = buffer.slice(boundary + 2);
      let id = 0;
      let data = '';
      for (const line of frame.split('\n')) {
        if (line.startsWith('id:')) id = Number(line.slice(3).trim());
        else if (line.startsWith('data:')) data += line.slice(5).trim();
      }
      if (!data) continue;
      const parsed = RunEventSchema.safeParse(JSON.parse(data));
      if (parsed.success) onEvent({ id, event: parsed.data });
    }
  }
}
