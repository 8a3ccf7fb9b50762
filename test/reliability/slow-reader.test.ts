import net from 'node:net';
import { expect, it } from 'vitest';
import { useIntegrationServer } from '../helpers/integration';
import { readEvents } from '../helpers/sse';
import { until } from '../helpers/until';

/**
 * A client that does not read its stream, on a run of 30 MB of events: dropped once its unread data passes a bound,
 * live or catching up, and free to come back. In the reliability suite, whose files run one at a time: the run's
 * volume makes its timing depend on what else the machine does.
 */
// Room for answers of 5,000 tokens (the runtime stops an answer at LOCAL_LLM_MAX_ANSWER_TOKENS).
const ctx = useIntegrationServer({ server: { RUN_LEASE_S: '2', LOCAL_LLM_MAX_ANSWER_TOKENS: '5000' } });

const attach = (runId: string, lastEventId = 0) =>
  ctx.server.request(`/runs/${runId}/stream`, { headers: { 'last-event-id': String(lastEventId) } });

it('is dropped once its unread data passes a bound, and can re-attach after its last event', async () => {
  // 5,000 tokens of 2 KB: far more than the socket buffers hold for a reader that never reads.
  const big = Array.from({ length: 5000 }, (_, i) => `${String(i).padStart(6, '0')}${'x'.repeat(2042)}`);
  ctx.model.reply(big);
  const url = new URL(ctx.server.url);
  const socket = net.connect(Number(url.port), url.hostname);
  socket.pause();
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  socket.on('error', () => undefined);
  const body = JSON.stringify({ message: 'flood' });
  socket.write(
    `POST /graphs/summary/run HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  await until(
    async () => (ctx.server.logs.some((l) => l.includes('does not read its stream')) ? true : undefined),
    40_000,
  );
  socket.resume();
  await closed;

  // The run went on without it; the stored stream has every event.
  const threads = (await (await ctx.server.request('/threads?limit=1')).json()) as { items: { id: string }[] };
  const runs = (await (await ctx.server.request(`/threads/${threads.items[0]!.id}/runs`)).json()) as {
    id: string;
  }[];
  const runId = runs[0]!.id;
  await until(async () => {
    // A look that fails on its way (a pooled connection the busy server closed as it was reused) is made again.
    const res = await ctx.server.request(`/runs/${runId}`).catch(() => undefined);
    const run = (await res?.json()) as { status: string } | undefined;
    return run?.status === 'completed' ? true : undefined;
    // 30 MB of events and node output to store: on a machine busy with other suites this takes a while.
  }, 60_000);
  // Catching up goes at this reader's pace: it is not dropped however much there is to catch up on.
  const events = await readEvents(await attach(runId));
  expect(events.at(-1)!.data.type).toBe('run_done');
  expect(events.filter((e) => e.data.type === 'token')).toHaveLength(3 * big.length);

  // A reader catching up that stops reading is dropped as a live one is: it does not hold the run's events in memory.
  const drops = ctx.server.logs.filter((l) => l.includes('does not read its stream')).length;
  const catchingUp = net.connect(Number(url.port), url.hostname);
  catchingUp.pause();
  catchingUp.on('error', () => undefined);
  const hungUp = new Promise<void>((resolve) => catchingUp.on('close', () => resolve()));
  catchingUp.write(`GET /runs/${runId}/stream HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`);
  await until(
    async () =>
      ctx.server.logs.filter((l) => l.includes('does not read its stream')).length > drops ? true : undefined,
    40_000,
  );
  catchingUp.resume();
  await hungUp;
  // 30 MB streamed, stored, read back whole and stalled on twice: more than a test's usual time on a busy machine.
}, 150_000);
