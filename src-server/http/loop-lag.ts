/**
 * Whether this process's event loop is falling behind: a timer due every TICK_MS fired more than LATE_MS late within
 * the last BEHIND_FOR_MS. The SSE writer holds frames while it is (http/sse.ts): with hundreds of streams, a write per
 * token per client is most of the process's work, and a loop that keeps up has no reason to wait.
 */
const TICK_MS = 50;
const LATE_MS = 10;
/** One late tick counts for this long, so that the answer does not flip with every turn of a busy loop. */
const BEHIND_FOR_MS = 1000;

let timer: NodeJS.Timeout | undefined;
let lastTick = 0;
let behindUntil = 0;

function tick(): void {
  const now = performance.now();
  if (now - lastTick - TICK_MS > LATE_MS) behindUntil = now + BEHIND_FOR_MS;
  lastTick = now;
}

/** Whether the loop has been late lately. The first call starts watching (a timer that never keeps the process up). */
export function loopIsBehind(): boolean {
  if (!timer) {
    lastTick = performance.now();
    timer = setInterval(tick, TICK_MS);
    timer.unref();
    return false;
  }
  return performance.now() < behindUntil;
}
