import type { Response } from 'express';

const HEARTBEAT_MS = 15_000;

export interface SseStream {
  /** Writes a frame made by formatSseEvent. */
  send(frame: string): void;
  end(): void;
  /** Resolves when the client goes away or the stream is ended. */
  readonly closed: Promise<void>;
}

/**
 * The one SSE writer: `event:`, `id:` and a JSON `data:` line per event, a comment every 15 s so
 * proxies keep idle streams open, and no buffering hints for reverse proxies.
 */
export function openSse(res: Response): SseStream {
  res.status(200);
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-cache, no-transform');
  res.setHeader('Connection', 'keep-alive');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  res.socket?.setNoDelay(true);
  res.write(': stream open\n\n');

  let ended = false;
  let pending = '';
  const flush = () => {
    if (!ended && pending) res.write(pending);
    pending = '';
  };
  const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), HEARTBEAT_MS);
  const closed = new Promise<void>((resolve) => {
    res.on('close', () => {
      ended = true;
      clearInterval(heartbeat);
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
