import type { Response } from 'express';
import { SSE_RETRY_MS } from '../contracts/events';
import { getLogger } from '../log';

const log = getLogger('svc.sse');

const HEARTBEAT_MS = 15_000;

/**
 * A client that does not read its stream is dropped once more than this has waited in its send buffer for
 * STALL_MS: its memory would otherwise grow with the run. It loses nothing: it re-attaches with Last-Event-ID.
 * A client that reads, however slowly, drains it. Catching up on stored events waits for it (`room()`) while it
 * reads, and drops it as the live stream does when it stops reading.
 */
export const MAX_UNREAD_BYTES = 1024 * 1024;
const STALL_MS = 5000;

export interface SseStream {
  /** Writes a frame made by formatSseFrame (contracts/events.ts). */
  send(frame: string): void;
  /**
   * Resolves once the client has read enough of what was sent to take more (at once when it has); a client that reads
   * nothing for STALL_MS meanwhile is dropped, and it resolves then too (the stream is closed).
   */
  room(): Promise<void>;
  end(): void;
  /** Resolves when the client goes away or the stream is ended. */
  readonly closed: Promise<void>;
}

/**
 * The one SSE writer: `event:`, `id:` and a JSON `data:` line per event, a comment every 15 s so
 * proxies keep idle streams open, no buffering hints for reverse proxies, and a bound on what a client
 * that does not read may leave in memory.
 */
export function openSse(res: Response): SseStream {
  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache, no-transform');
  res.setHeader('Connection', 'keep-alive');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  res.socket?.setNoDelay(true);
  // The reconnection delay first, so that every client, whatever its default, comes back at the same pace.
  res.write(`retry: ${SSE_RETRY_MS}\n: stream open\n\n`);

  let ended = false;
  let pending = '';
  let stalled: NodeJS.Timeout | undefined;
  const drop = () => {
    log.warn(`dropping a client that does not read its stream (${res.writableLength} bytes unread)`);
    ended = true;
    res.destroy();
  };
  const flush = () => {
    if (!ended && pending) res.write(pending);
    pending = '';
    if (!ended && res.writableLength > MAX_UNREAD_BYTES) {
      // Also after the stream ended: what the client has not read is still held for it.
      stalled ??= setTimeout(() => {
        if (!res.destroyed && res.writableLength > MAX_UNREAD_BYTES) drop();
      }, STALL_MS);
    }
  };
  res.on('drain', () => {
    clearTimeout(stalled);
    stalled = undefined;
  });
  const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), HEARTBEAT_MS);
  const closed = new Promise<void>((resolve) => {
    res.on('close', () => {
      ended = true;
      clearInterval(heartbeat);
      clearTimeout(stalled);
      resolve();
    });
  });

  return {
    send(frame) {
      if (ended) return;
      // Frames of one tick (a burst of tokens) leave in one write: one syscall, not one per token.
      if (pending === '') process.nextTick(flush);
      pending += frame;
    },
    room() {
      if (ended || res.writableLength + pending.length < MAX_UNREAD_BYTES) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const stall = setTimeout(() => {
          if (!ended) drop();
          done();
        }, STALL_MS);
        const done = () => {
          clearTimeout(stall);
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.on('drain', done);
        res.on('close', done);
      });
    },
    end() {
      if (ended) return;
      flush();
      ended = true;
      clearInterval(heartbeat);
      res.end();
    },
    closed,
  };
}
