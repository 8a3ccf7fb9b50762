import type { Response } from 'express';
import { SSE_RETRY_MS } from '../contracts/events';
import { getLogger } from '../log';

const log = getLogger('svc.sse');

const HEARTBEAT_MS = 15_000;

/**
 * A client that does not read its stream is dropped once more than this has waited in its send buffer and it has
 * read nothing for STALL_MS: its memory would otherwise grow with the run. It loses nothing: it re-attaches with
 * Last-Event-ID. A client that reads, however slowly, is kept. Catching up on stored events waits for it (`room()`)
 * while it reads, and drops it as the live stream does when it stops reading.
 */
export const MAX_UNREAD_BYTES = 1024 * 1024;
/**
 * Long enough for a slow reader's progress to show: a socket is told it may write again only once the kernel's send
 * buffer (megabytes on a fast link) has drained by half, which takes seconds for a client reading 200 KB a second.
 */
const STALL_MS = 15_000;
/**
 * A reader this far behind is dropped at once, reading or not: it re-attaches after its last event and catches up
 * from the store at its own pace (at most MAX_UNREAD_BYTES ahead), rather than having the run's events held for it in
 * memory while it falls further behind. Far above any one event: a run's end carries its phases' outputs whole.
 */
export const MAX_BEHIND_BYTES = 64 * 1024 * 1024;
/** Frames leave in writes of at most this many characters: each one the client takes shows it is still reading. */
const SLICE = 64 * 1024;

export interface SseStream {
  /** Writes a frame made by formatSseFrame (contracts/events.ts). */
  send(frame: string): void;
  /**
   * Resolves once the client has read enough of what was sent to take more (at once when it has); a client that reads
   * nothing for STALL_MS meanwhile is dropped, and it resolves then too (the stream is closed).
   */
  room(): Promise<void>;
  end(): void;
  /**
   * Cuts the stream after a failure on the server's side, and logs why: the client sees a broken stream rather than
   * one that ended, and re-attaches after its last event (an EventSource does so by itself; curl reports the transfer
   * cut short). A stream that ended cleanly would say the run had ended.
   */
  fail(reason: string): void;
  /** Resolves when the client goes away or the stream is ended. */
  readonly closed: Promise<void>;
}

/** Told when a stream opens and when it closes: the process's open streams, for its metrics. */
export interface StreamWatcher {
  streamOpened(): void;
  streamClosed(): void;
}

/**
 * The one SSE writer: `event:`, `id:` and a JSON `data:` line per event, a comment every 15 s so
 * proxies keep idle streams open, no buffering hints for reverse proxies, and a bound on what a client
 * that does not read may leave in memory.
 */
export function openSse(res: Response, watcher?: StreamWatcher, options: { retry?: boolean } = {}): SseStream {
  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache, no-transform');
  res.setHeader('Connection', 'keep-alive');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  res.socket?.setNoDelay(true);

  let ended = false;
  /** Ending once what is queued has left: end() was called. */
  let ending = false;
  /** Frames not yet handed to the response: they leave in slices, each once the client has taken the one before. */
  let queued = '';
  let scheduled = false;
  /** When the client last kept up (took what was sent, or a slice of a backlog): the start of a stall. */
  let keptUpAt = performance.now();
  let watchdog: NodeJS.Timeout | undefined;
  const roomWaiters = new Set<() => void>();

  const unread = () => queued.length + res.writableLength;
  const drop = () => {
    log.warn(`dropping a client that does not read its stream (${unread()} bytes unread)`);
    ended = true;
    res.destroy();
  };
  const flush = () => {
    scheduled = false;
    while (queued && !res.writableNeedDrain && !res.destroyed) {
      keptUpAt = performance.now();
      const slice = queued.length > SLICE ? queued.slice(0, SLICE) : queued;
      queued = queued.slice(slice.length);
      res.write(slice);
    }
    if (ending && !queued && !res.writableEnded) res.end();
    if (unread() > MAX_BEHIND_BYTES && !res.destroyed) return drop();
    watch();
  };
  /**
   * A client with more than MAX_UNREAD_BYTES waiting for it must take a slice every STALL_MS, also after the stream
   * ended (what it has not read is still held for it). A slow reader that keeps taking slices is kept.
   */
  const watch = () => {
    if (watchdog || res.destroyed || unread() <= MAX_UNREAD_BYTES) return;
    watchdog = setTimeout(
      () => {
        watchdog = undefined;
        if (res.destroyed) return;
        if (unread() > MAX_UNREAD_BYTES && performance.now() - keptUpAt >= STALL_MS) drop();
        else watch();
      },
      Math.max(0, keptUpAt + STALL_MS - performance.now()),
    );
  };
  res.on('drain', () => {
    keptUpAt = performance.now();
    flush();
    if (unread() < MAX_UNREAD_BYTES) for (const resolve of roomWaiters) resolve();
  });
  // The reconnection delay first, so that every client, whatever its default, comes back at the same pace. Not on
  // the LangGraph API's streams (`retry: false`): its clients reconnect by their own rules, and older ones read the
  // line as an event of their own.
  res.write(options.retry === false ? ': stream open\n\n' : `retry: ${SSE_RETRY_MS}\n: stream open\n\n`);
  const heartbeat = setInterval(() => {
    // A stream with frames on their way needs no keep-alive.
    if (!queued && !res.writableNeedDrain && !ended) res.write(': keep-alive\n\n');
  }, HEARTBEAT_MS);
  watcher?.streamOpened();
  const closed = new Promise<void>((resolve) => {
    const onClose = () => {
      watcher?.streamClosed();
      ended = true;
      clearInterval(heartbeat);
      clearTimeout(watchdog);
      for (const resolveRoom of roomWaiters) resolveRoom();
      resolve();
    };
    // A client that left before its stream opened (while the request was being answered) is closed already, and
    // its 'close' will not come again.
    if (res.closed) onClose();
    else res.on('close', onClose);
  });

  return {
    send(frame) {
      if (ended) return;
      queued += frame;
      // Frames of one tick (a burst of tokens) leave in one write: one syscall, not one per token.
      if (!scheduled) {
        scheduled = true;
        process.nextTick(flush);
      }
    },
    room() {
      if (ended || unread() < MAX_UNREAD_BYTES) return Promise.resolve();
      watch();
      return new Promise<void>((resolve) => {
        const done = () => {
          roomWaiters.delete(done);
          resolve();
        };
        roomWaiters.add(done);
      });
    },
    fail(reason) {
      if (ended) return;
      log.warn(`cutting a stream short: ${reason}`);
      ended = true;
      res.destroy();
    },
    end() {
      if (ended) return;
      ended = true;
      ending = true;
      clearInterval(heartbeat);
      flush();
    },
    closed,
  };
}
