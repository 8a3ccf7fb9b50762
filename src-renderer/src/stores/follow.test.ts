import type { RunEvent } from '@contracts/events';
import { describe, expect, it } from 'vitest';
import type { EventHandler, StreamedEvent } from '../api/sse-client';
import { followStream, RECONNECT_ATTEMPTS } from './follow';

const RUN = '11111111-1111-4111-8111-111111111111';
const THREAD = '22222222-2222-4222-8222-222222222222';

/** A run's whole stream, as the server stores it: ids 1…n. */
function runEvents(tokens: number, end: RunEvent | null): StreamedEvent[] {
  const events: RunEvent[] = [
    { type: 'run_start', run_id: RUN, thread_id: THREAD, agent: 'a', model: 'm' },
    { type: 'node_enter', node: 'dispatch' },
    ...Array.from({ length: tokens }, (_, i): RunEvent => ({ type: 'token', node: 'dispatch', text: `t${i} ` })),
    ...(end ? [end] : []),
  ];
  return events.map((event, i) => ({ id: i + 1, event }));
}

/**
 * A stand-in for the server's stream endpoints: each connection sends the stored events after the id asked for,
 * and drops (ends without the last event) after `dropAfter` of them, as a proxy or a restarting server would.
 */
function server(stored: StreamedEvent[], plan: { dropAfter?: number[]; failAttaches?: number; over?: boolean } = {}) {
  const calls: { after: number }[] = [];
  const drops = [...(plan.dropAfter ?? [])];
  let failures = plan.failAttaches ?? 0;
  const send = async (after: number, onEvent: EventHandler) => {
    calls.push({ after });
    const limit = drops.shift() ?? Infinity;
    const rest = stored.filter((e) => e.id > after).slice(0, limit);
    for (const e of rest) onEvent(e);
    return plan.over && rest.length === 0 ? 'over' : 'ended';
  };
  return {
    calls,
    open: (_signal: AbortSignal, onEvent: EventHandler) => send(0, onEvent),
    attach: async (_runId: string, after: number, _signal: AbortSignal, onEvent: EventHandler) => {
      if (failures-- > 0) throw new Error('connection refused');
      return send(after, onEvent);
    },
  };
}

/** The studio's side: what it saw, in order, and whether it fell back to the stored run. */
function client(stand: ReturnType<typeof server>, signal = new AbortController().signal) {
  const seen: StreamedEvent[] = [];
  const reloads: string[] = [];
  const waits: number[] = [];
  const run = () =>
    followStream({
      open: stand.open,
      attach: stand.attach,
      reload: async (runId) => void reloads.push(runId),
      onEvent: (e) => seen.push(e),
      flush: () => undefined,
      position: () => ({
        runId: seen.find((e) => e.event.type === 'run_start') ? RUN : null,
        lastEventId: seen.at(-1)?.id ?? 0,
      }),
      signal,
      wait: async (ms) => void waits.push(ms),
    });
  return { seen, reloads, waits, run };
}

describe('following a run stream', () => {
  it('re-attaches after the last event id each time the stream drops, and sees every event once', async () => {
    const stored = runEvents(20, { type: 'run_done', run_id: RUN, output: 'done' });
    const stand = server(stored, { dropAfter: [5, 7, 3] });
    const studio = client(stand);
    await studio.run();
    expect(studio.seen.map((e) => e.id)).toEqual(stored.map((e) => e.id));
    expect(stand.calls.map((c) => c.after)).toEqual([0, 5, 12, 15]);
    expect(studio.reloads).toEqual([]);
  });

  it('waits a little longer after each failed re-attach, and starts over once one brings events', async () => {
    const stored = runEvents(4, { type: 'run_done', run_id: RUN, output: 'done' });
    const stand = server(stored, { dropAfter: [3], failAttaches: 3 });
    const studio = client(stand);
    await studio.run();
    expect(studio.waits).toEqual([500, 1000, 1500, 2000]);
    expect(studio.seen.at(-1)!.event.type).toBe('run_done');
  });

  it('shows the stored run after RECONNECT_ATTEMPTS failed re-attaches in a row', async () => {
    const stand = server(runEvents(4, null), { dropAfter: [3], failAttaches: 1000 });
    const studio = client(stand);
    await studio.run();
    expect(studio.waits).toHaveLength(RECONNECT_ATTEMPTS);
    expect(studio.waits.at(-1)).toBe(5000);
    expect(studio.reloads).toEqual([RUN]);
  });

  it('shows the stored run when two answered re-attaches bring nothing (a run nobody executes any more)', async () => {
    const stand = server(runEvents(4, null));
    const studio = client(stand);
    await studio.run();
    expect(stand.calls.map((c) => c.after)).toEqual([0, 6, 6]);
    expect(studio.reloads).toEqual([RUN]);
  });

  it('stops at a stream that says it is over (the run waits for someone), without re-attaching', async () => {
    const stand = server(runEvents(2, null), { dropAfter: [4], over: true });
    const studio = client(stand);
    await studio.run();
    // Without the server's word it would ask once more, then fall back to the stored run.
    expect(stand.calls.map((c) => c.after)).toEqual([0, 4]);
    expect(studio.reloads).toEqual([]);
  });

  it('ends at a gate the stream reached, whichever connection brought it', async () => {
    const gate: RunEvent = { type: 'gate_waiting', node: 'gate', question: 'Ship?', required_context: [], context: {} };
    const stand = server(runEvents(2, gate), { dropAfter: [3] });
    const studio = client(stand);
    await studio.run();
    expect(stand.calls.map((c) => c.after)).toEqual([0, 3]);
    expect(studio.seen.at(-1)!.event.type).toBe('gate_waiting');
    expect(studio.reloads).toEqual([]);
  });

  it('does not re-attach once the person stopped following', async () => {
    const controller = new AbortController();
    const stand = server(runEvents(10, null), { dropAfter: [4] });
    const studio = client(stand, controller.signal);
    controller.abort();
    await studio.run();
    expect(stand.calls).toHaveLength(1);
    expect(studio.reloads).toEqual([]);
  });

  it('throws what the first stream threw (the run could not start), and attaches nothing', async () => {
    const stand = server([]);
    await expect(
      followStream({
        open: async () => {
          throw new Error('429 the local runtime queue is full');
        },
        attach: stand.attach,
        reload: async () => undefined,
        onEvent: () => undefined,
        flush: () => undefined,
        position: () => ({ runId: null, lastEventId: 0 }),
        signal: new AbortController().signal,
      }),
    ).rejects.toThrow('429 the local runtime queue is full');
    expect(stand.calls).toHaveLength(0);
  });
});
