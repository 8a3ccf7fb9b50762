import { beforeAll, expect, it } from 'vitest';
import { useIntegrationServer } from '../helpers/integration';
import type { ServerProcess } from '../helpers/process';
import { readEvents } from '../helpers/sse';

const RUNS = 10;
const CLIENTS_PER_RUN = 20;
/** Each node streams for about 20 s, so every run lasts about a minute. */
const TOKENS_PER_NODE = 400;
const TOKEN_DELAY_MS = 50;

const ctx = useIntegrationServer({ server: false });
let server: ServerProcess;

beforeAll(async () => {
  server = await ctx.spawn({ LOCAL_LLM_MAX_CONCURRENT: String(RUNS) });
});

it(`holds ${RUNS * CLIENTS_PER_RUN} re-attached SSE clients on live runs for a minute without losing an event`, async () => {
  ctx.model.reply(
    Array.from({ length: TOKENS_PER_NODE }, (_, i) => `${i} `),
    TOKEN_DELAY_MS,
  );
  const runIds: string[] = [];
  const starters = [];
  for (let i = 0; i < RUNS; i++) {
    const res = await server.request('/graphs/summary/run', { method: 'POST', json: { message: `load ${i}` } });
    starters.push(
      readEvents(res, (e) => {
        if (e.data.type === 'run_start') runIds.push(e.data.run_id);
        return e.data.type === 'run_start';
      }),
    );
  }
  await Promise.all(starters);
  expect(runIds).toHaveLength(RUNS);

  // Clients join at different moments, each re-attaching from the start or after a Last-Event-ID.
  const clients = runIds.flatMap((runId) =>
    Array.from({ length: CLIENTS_PER_RUN }, async (_, k) => {
      await new Promise((r) => setTimeout(r, k * 500));
      const after = k % 2 === 0 ? 0 : k;
      const res = await server.request(`/runs/${runId}/stream`, {
        headers: after ? { 'last-event-id': String(after) } : {},
      });
      const events = await readEvents(res);
      return { runId, after, ids: events.map((e) => e.id), last: events.at(-1)?.data.type };
    }),
  );
  const results = await Promise.all(clients);

  const totals = new Map<string, number>();
  for (const r of results) {
    expect(r.last).toBe('run_done');
    // Contiguous ids right after the one the client had seen: nothing lost, nothing repeated.
    expect(r.ids[0]).toBe(r.after + 1);
    expect(r.ids).toEqual(r.ids.map((_, i) => r.after + 1 + i));
    const total = r.ids.at(-1)!;
    expect(totals.get(r.runId) ?? total).toBe(total);
    totals.set(r.runId, total);
  }
  // run_start + 3 × (node_enter + tokens + node_exit) + run_done
  for (const total of totals.values()) expect(total).toBe(1 + 3 * (TOKENS_PER_NODE + 2) + 1);
});
