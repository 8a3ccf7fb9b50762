import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useIntegrationServer } from '../helpers/integration';
import { startNginx, type Nginx } from '../helpers/nginx';
import type { ServerProcess } from '../helpers/process';
import { requestServer, type TestRequestInit } from '../helpers/request';
import { followAccepted, readEvents, type ReceivedEvent } from '../helpers/sse';
import { until } from '../helpers/until';

/**
 * The shared server as a team runs it: three processes on one PostgreSQL behind nginx (Debian's package),
 * round robin, no stickiness, no buffering. Every call goes through nginx, and one process is killed mid-run.
 */
const ctx = useIntegrationServer({ server: false });
const ENV = { RUN_LEASE_S: '2', LOCAL_LLM_MAX_CONCURRENT: '2' };

let servers: ServerProcess[] = [];
let nginx: Nginx | undefined;
let base = '';

const request = (p: string, init?: TestRequestInit) => requestServer(base, p, init);

const run = (body: Record<string, unknown>, agent = 'summary') =>
  request(`/graphs/${agent}/run`, { method: 'POST', json: body });

const attach = (runId: string, lastEventId: number) =>
  request(`/runs/${runId}/stream`, { headers: { 'last-event-id': String(lastEventId) } });

beforeAll(async () => {
  servers = await Promise.all([ctx.spawn(ENV), ctx.spawn(ENV), ctx.spawn(ENV)]);
  nginx = await startNginx(servers.map((s) => s.url));
  base = nginx.url;
});

afterAll(async () => {
  await nginx?.stop();
  await Promise.all(servers.map((s) => s.stop()));
});

/** The process (of the three) that holds a run's lease, from the owner id `<pid>-<uuid>` in its row. */
async function executor(runId: string): Promise<ServerProcess> {
  const client = new pg.Client({ connectionString: ctx.db.url });
  await client.connect();
  try {
    const { rows } = await client.query<{ owner_id: string }>('SELECT owner_id FROM svc_runs WHERE id = $1', [runId]);
    const pid = Number(rows[0]?.owner_id.split('-')[0]);
    const found = servers.find((s) => s.child.pid === pid);
    if (!found) throw new Error(`no server process with pid ${pid}`);
    return found;
  } finally {
    await client.end();
  }
}

describe('three processes behind nginx, without sticky sessions', () => {
  it('runs, re-attaches, approves, rejects, cancels and reports the queue through any process', async () => {
    ctx.model.reply(['fine ', 'work'], 5);
    const first = await readEvents(await run({ message: 'review' }, 'review'));
    expect(first.at(-1)!.data.type).toBe('gate_waiting');
    const { thread_id: threadId, run_id: runId } = first[0]!.data as { thread_id: string; run_id: string };

    // Re-attaching after the gate, on whichever process nginx picks, gives the same stream.
    for (let i = 0; i < 3; i++) {
      const again = await readEvents(await attach(runId, 0));
      expect(again.map((e) => [e.id, e.data])).toEqual(first.map((e) => [e.id, e.data]));
    }
    const approved = await readEvents(
      await followAccepted(
        await request(`/threads/${threadId}/gates/gate/approve`, { method: 'POST', json: { reason: 'through nginx' } }),
        (path) => request(path),
      ),
    );
    expect(approved[0]!.id).toBe(first.at(-1)!.id + 1);
    expect(approved.at(-1)!.data.type).toBe('run_done');
    // A second approval, on another process, finds the gate decided.
    const twice = await request(`/threads/${threadId}/gates/gate/approve`, { method: 'POST', json: {} });
    expect(twice.status).toBe(409);

    const rejected = await readEvents(await run({ message: 'reject me' }, 'review'));
    const rejectedThread = (rejected[0]!.data as { thread_id: string }).thread_id;
    const rejection = await readEvents(
      await followAccepted(
        await request(`/threads/${rejectedThread}/gates/gate/reject`, { method: 'POST', json: { reason: 'no' } }),
        (path) => request(path),
      ),
    );
    expect(rejection.map((e) => e.data.type)).toEqual(['gate_rejected', 'run_rejected']);

    ctx.model.reply(
      Array.from({ length: 200 }, (_, i) => `${i} `),
      20,
    );
    let longRun = '';
    const reading = readEvents(await run({ message: 'to cancel' }), (e) => {
      if (e.data.type === 'run_start') longRun = e.data.run_id;
    });
    await until(async () => longRun || undefined);
    // The cluster's queue, as any process reports it: the run's model call holds one of the two slots.
    const queue = await until(async () => {
      const status = (await (await request('/queue/status')).json()) as { slots: number; active: number };
      return status.active === 1 ? status : undefined;
    });
    expect(queue.slots).toBe(2);
    const cancel = await request(`/runs/${longRun}/cancel`, { method: 'POST', json: { reason: 'enough' } });
    expect(cancel.status).toBe(200);
    expect((await reading).at(-1)!.data.type).toBe('run_cancelled');
  });

  it('completes the runs of a process killed mid-stream on another, and a re-attaching client sees one stream', async () => {
    ctx.model.reply(
      Array.from({ length: 40 }, (_, i) => `w${i} `),
      15,
    );
    let runId = '';
    const seen: ReceivedEvent[] = [];
    await readEvents(await run({ message: 'survive' }), (e) => {
      seen.push(e);
      if (e.data.type === 'run_start') runId = e.data.run_id;
      return e.data.type === 'token' && e.data.node === 'execute';
    });
    const victim = await executor(runId);
    const killedAt = Date.now();
    victim.child.kill('SIGKILL');
    await victim.exited;

    const rest: ReceivedEvent[] = [];
    // The client re-attaches through nginx after its last event, as an EventSource would, until the run ends.
    while (rest.at(-1)?.data.type !== 'run_done') {
      const last = (rest.at(-1) ?? seen.at(-1))!.id;
      rest.push(...(await readEvents(await attach(runId, last)).catch(() => [])));
      if (Date.now() - killedAt > 30_000) throw new Error('the run was not completed by another process');
    }
    const whole = [...seen, ...rest];
    const ids = whole.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(whole.filter((e) => e.data.type === 'run_start')).toHaveLength(1);
    expect(whole.filter((e) => e.data.type === 'run_resumed')).toHaveLength(1);
    // Within the lease (2 s) and a supervision tick, plus the rerun of the cut-off phase.
    expect(Date.now() - killedAt).toBeLessThan(15_000);
    const survivor = await executor(runId).catch(() => undefined);
    expect(survivor).toBeUndefined(); // finished: no process holds it any more
    servers = servers.filter((s) => s !== victim);
  });
});
