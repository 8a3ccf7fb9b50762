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

/** A run's events as a reader got them, or as its store holds them: ids and the data texts, in order. */
export interface EventTrail {
  ids: number[];
  data: string[];
}

/**
 * What a reader's events say against its run's stored stream (read once the run ended): every stored event after
 * `from` (where the reader began) reached it, under its id and exactly as stored, and its ids only grow. The only
 * other events it may have had are those a leg sent live before its process lost the run: never stored, and followed
 * by the run_resumed of the leg that took the run over (after their ids). Returns the problems, none when they agree.
 */
export function streamProblems(got: EventTrail, stored: EventTrail, from = 0): string[] {
  const problems: string[] = [];
  for (let i = 1; i < got.ids.length; i++) {
    if (got.ids[i]! <= got.ids[i - 1]!) problems.push(`event ${got.ids[i]} came after ${got.ids[i - 1]}`);
  }
  const received = new Map(got.ids.map((id, i) => [id, got.data[i]!]));
  const takeovers: number[] = [];
  stored.ids.forEach((id, i) => {
    const data = stored.data[i]!;
    if ((JSON.parse(data) as { type: string }).type === 'run_resumed') takeovers.push(id);
    if (id <= from) return;
    if (!received.has(id)) problems.push(`stored event ${id} never reached the reader`);
    else if (received.get(id) !== data) problems.push(`event ${id} differs from the stored one`);
  });
  const kept = new Set(stored.ids);
  for (const id of got.ids) {
    if (!kept.has(id) && !takeovers.some((t) => t > id))
      problems.push(`event ${id} is not stored, and no takeover followed it`);
  }
  return problems;
}
