import type { Request, Response } from 'express';
import { errorMessage } from '../contracts/errors';
import type { FollowableRun } from '../services/runs.service';
import { openSse, type StreamWatcher } from './sse';

/** Event ids are PostgreSQL integers: a larger id says the client has seen everything there will be. */
const MAX_EVENT_ID = 2 ** 31 - 1;

/** The client's last seen event: the `Last-Event-ID` header (EventSource reconnects) or `?last_event_id=`. */
export function lastEventId(req: Request): number {
  const raw =
    req.get('last-event-id') ?? (typeof req.query.last_event_id === 'string' ? req.query.last_event_id : undefined);
  const id = Number(raw);
  return Number.isInteger(id) && id > 0 ? Math.min(id, MAX_EVENT_ID) : 0;
}

/**
 * A POST whose answer is a run as JSON by default would contradict the documented run stream; one whose only
 * answer is a stream leads generated SSE clients to send it again on any error or cut. So the run's POST answers
 * 200 either way, the stream unless the request asks for JSON, and the document lists both media types, JSON first.
 */
export function wantsJson(req: Request): boolean {
  return req.accepts(['text/event-stream', 'application/json']) === 'application/json';
}

/**
 * Sends a run's events as SSE until it ends or the client leaves; leaving never stops the run. One loop over the run's
 * events: each batch is written, then the loop waits until the client has room for more (a client that stops
 * reading is dropped after the stall limit, http/sse.ts), so a slow reader is never handed a whole run at once.
 */
export async function pipeRunStream(
  run: FollowableRun,
  afterId: number,
  res: Response,
  watcher?: StreamWatcher,
): Promise<void> {
  const sse = openSse(res, watcher);
  const gone = new AbortController();
  void sse.closed.then(() => gone.abort());
  try {
    for await (const batch of run.events(afterId, gone.signal)) {
      sse.send(batch.map((event) => event.frame).join(''));
      await sse.room();
    }
  } catch (error) {
    sse.fail(`following run ${run.runId} failed: ${errorMessage(error)}`);
  } finally {
    sse.end();
  }
}
