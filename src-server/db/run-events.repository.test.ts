import { describe, expect, it } from 'vitest';
import { eventRows, MAX_EVENTS_PER_ROW } from './run-events.repository';

const event = (runId: string, seq: number, type = 'token') => ({
  runId,
  seq,
  type,
  data: JSON.stringify({ type, text: `t${seq}` }),
  holder: { owner: 'me', attempt: 1 },
});

/** Each row as `run:first-last type`, for reading the packing at a glance. */
const shape = (events: ReturnType<typeof event>[]) =>
  eventRows(events).map((r) => `${r.runId}:${r.seq}-${r.seqLast ?? r.seq} ${r.type}`);

describe('eventRows: how a batch of events is stored', () => {
  it("stores a streaming node's tokens in rows of up to MAX_EVENTS_PER_ROW, each run's apart", () => {
    const batch = [event('a', 1, 'node_enter')];
    for (let seq = 2; seq <= 300; seq++) batch.push(event('a', seq), event('b', seq));
    batch.push(event('a', 301, 'node_exit'));
    expect(MAX_EVENTS_PER_ROW).toBe(128);
    expect(shape(batch)).toEqual([
      'a:1-1 node_enter',
      'a:2-129 token',
      'b:2-129 token',
      'a:130-257 token',
      'b:130-257 token',
      'a:258-300 token',
      'b:258-300 token',
      'a:301-301 node_exit',
    ]);
  });

  it('keeps every other event, a change of type and a gap in the ids in rows of their own', () => {
    const batch = [
      event('a', 1),
      event('a', 2),
      event('a', 3, 'thinking'),
      event('a', 4, 'thinking'),
      event('a', 5),
      event('a', 7),
      event('a', 8, 'queue'),
      event('a', 9, 'queue'),
    ];
    expect(shape(batch)).toEqual([
      'a:1-2 token',
      'a:3-4 thinking',
      'a:5-5 token',
      'a:7-7 token',
      'a:8-8 queue',
      'a:9-9 queue',
    ]);
  });

  it('keeps an event whose text holds a newline in a row of its own', () => {
    const odd = { ...event('a', 2), data: '{"type":"token",\n"text":"b"}' };
    expect(shape([event('a', 1), odd, event('a', 3), event('a', 4)])).toEqual([
      'a:1-1 token',
      'a:2-2 token',
      'a:3-4 token',
    ]);
  });

  it("joins a row's texts so that each comes back exactly, and gives the same rows for the same batch", () => {
    const texts = ['{"type":"token","text":"a\\nb"}', '{"type":"token","text":"\\"✓\\\\"}'];
    const batch = texts.map((data, i) => ({ ...event('a', i + 1), data }));
    const [row] = eventRows(batch);
    expect(row!.data.split('\n')).toEqual(texts);
    expect(eventRows(batch)).toEqual(eventRows(batch));
  });
});
