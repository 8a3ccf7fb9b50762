import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useIntegrationServer } from '../helpers/integration';
import type { ServerProcess } from '../helpers/process';
import { requestServer } from '../helpers/request';
import { readEvents, streamProblems, type ReceivedEvent } from '../helpers/sse';
import { until } from '../helpers/until';

/**
 * A process that stalls (its event loop held, as on a machine past its capacity) past its runs' leases is not dead:
 * its run is taken over elsewhere while it still believes it executes it, and it wakes later with events it never
 * stored. Those stay unstored (the run is no longer its), so readers who re-attach to it, to the process that took the
 * run over, or to a third, before the takeover, after it and after the stalled one wakes, each get every stored event
 * after their place, under the same ids, to the run's end.
 */
const ctx = useIntegrationServer({ server: false });
const ENV = { RUN_LEASE_S: '2' };

let servers: ServerProcess[] = [];

beforeAll(async () => {
  servers = await Promise.all([ctx.spawn(ENV), ctx.spawn(ENV), ctx.spawn(ENV)]);
});

afterAll(async () => {
  for (const s of servers) s.child.kill('SIGCONT');
  await Promise.all(servers.map((s) => s.stop()));
});

/** The run's attempt: 2 once another process has taken it over. */
async function attempts(runId: string): Promise<number> {
  const client = new pg.Client({ connectionString: ctx.db.url });
  await client.connect();
  try {
    const { rows } = await client.query<{ attempts: number }>('SELECT attempts FROM svc_runs WHERE id = $1', [runId]);
    return rows[0]!.attempts;
  } finally {
    await client.end();
  }
}

const trail = (events: ReceivedEvent[]) => ({
  ids: events.map((e) => e.id),
  data: events.map((e) => JSON.stringify(e.data)),
});

/** Follows a run from `after` on one process to its end (or until the server ends the stream). */
async function follow(server: ServerProcess, runId: string, after: number): Promise<ReceivedEvent[]> {
  const res = await requestServer(server.url, `/runs/${runId}/stream`, {
    headers: { 'last-event-id': String(after) },
  });
  if (res.status === 204) return [];
  return readEvents(res, (e) => ['run_done', 'run_error'].includes(e.data.type));
}

describe('a process that stalls past its lease', () => {
  it('its run goes on elsewhere; readers re-attached anywhere, before and after, get the stored stream to its end', async () => {
    ctx.model.reply(
      Array.from({ length: 120 }, (_, i) => `w${i} `),
      25,
    );
    const [stalled, other, third] = servers as [ServerProcess, ServerProcess, ServerProcess];
    let runId = '';
    let tokens = 0;
    const seen = await readEvents(
      await requestServer(stalled.url, '/graphs/summary/run', { method: 'POST', json: { message: 'stall' } }),
      (e) => {
        if (e.data.type === 'run_start') runId = e.data.run_id;
        return e.data.type === 'token' && ++tokens === 60;
      },
    );
    const cutAt = seen.at(-1)!.id;
    // Held as an event loop is on a machine past its capacity: it neither renews its lease nor answers.
    stalled.child.kill('SIGSTOP');
    const readers: Promise<ReceivedEvent[]>[] = [];
    const attach = (...on: ServerProcess[]) => on.forEach((s) => readers.push(follow(s, runId, cutAt)));
    attach(stalled, other, third);
    await until(async () => ((await attempts(runId)) >= 2 ? true : undefined), 20_000);
    attach(other, third);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    // It wakes while the run goes on elsewhere, still holding what it had not stored.
    stalled.child.kill('SIGCONT');
    attach(stalled, other, third);
    await new Promise((resolve) => setTimeout(resolve, 300));
    attach(stalled);
    const results = await Promise.all(readers);

    const whole = await follow(third, runId, 0);
    expect(whole.at(-1)!.data.type).toBe('run_done');
    expect(whole.filter((e) => e.data.type === 'run_resumed')).toHaveLength(1);
    const stored = trail(whole);
    const problems = results.map((events, reader) => ({
      reader,
      problems: streamProblems(trail(events), stored, cutAt),
    }));
    expect(problems).toEqual(results.map((_, reader) => ({ reader, problems: [] })));
    for (const events of results) expect(events.at(-1)!.data.type).toBe('run_done');
  }, 120_000);
});
