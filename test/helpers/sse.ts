import { RunEventSchema, type RunEvent } from '../../src-server/contracts/events';
import { checkRunEvent } from './contract';

export interface ReceivedEvent {
  id: number;
  name: string;
  data: RunEvent;
}

/**
 * Reads a streamed body piece by piece, split at `separator` (`\n\n` between SSE frames, `\n` between
 * lines). `onPiece` may return true to stop reading early: the connection is then dropped, as a client
 * that goes away would.
 */
export async function readPieces(res: Response, separator: string, onPiece: (piece: string) => boolean): Promise<void> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let boundary: number;
    while ((boundary = buffer.indexOf(separator)) >= 0) {
      const piece = buffer.slice(0, boundary);
      buffer = buffer.slice(boundary + separator.length);
      if (onPiece(piece)) {
        await reader.cancel();
        return;
      }
    }
  }
}

/**
 * Reads an SSE response frame by frame, checking each frame's `event:` against its data's `type`
 * and the data against the shared event union and the RunEvent schema of the served document.
 * `onEvent` may return true to stop reading early (the connection is then dropped, as a client
 * that goes away would).
 */
export async function readEvents(
  res: Response,
  onEvent?: (event: ReceivedEvent) => boolean | void,
): Promise<ReceivedEvent[]> {
  if (!res.ok) throw new Error(`stream request failed with ${res.status}: ${await res.text()}`);
  if (!res.headers.get('content-type')?.startsWith('text/event-stream'))
    throw new Error(`not an event stream: ${res.headers.get('content-type')}`);
  const events: ReceivedEvent[] = [];
  await readPieces(res, '\n\n', (frame) => {
    const fields: Record<string, string> = {};
    for (const line of frame.split('\n')) {
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      fields[line.slice(0, colon)] = line.slice(colon + 1).trimStart();
    }
    if (!fields.data) return false;
    const json: unknown = JSON.parse(fields.data);
    checkRunEvent(res.url, json);
    const data = RunEventSchema.parse(json);
    if (fields.event !== data.type) throw new Error(`event name ${fields.event} does not match data type ${data.type}`);
    const event = { id: Number(fields.id), name: fields.event, data };
    events.push(event);
    return Boolean(onEvent?.(event));
  });
  return events;
}

/** The event names in order, with consecutive token events folded into one, for order assertions. */
export function eventOrder(events: ReceivedEvent[]): string[] {
  const order: string[] = [];
  for (const e of events) {
    const label =
      'node' in e.data && e.name !== 'token'
        ? `${e.name}:${e.data.node}`
        : e.name === 'token'
          ? `token:${(e.data as { node: string }).node}`
          : e.name;
    if (label !== order.at(-1) || !label.startsWith('token')) order.push(label);
  }
  return order;
}

/**
 * A gate decision or cancel answers JSON (RunAccepted) with the place to follow the run from: this opens that
 * `stream_url` with `open` (the same server, or a proxy in front of it). A refused decision fails the test.
 */
export async function followAccepted(accepted: Response, open: (path: string) => Promise<Response>): Promise<Response> {
  if (accepted.status !== 202 && accepted.status !== 200) {
    throw new Error(`the decision was refused with ${accepted.status}: ${await accepted.text()}`);
  }
  const { stream_url } = (await accepted.json()) as { stream_url: string };
  return open(stream_url);
}
