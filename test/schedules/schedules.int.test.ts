import { beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ORG_ID, DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import type { Schedule, ScheduleFire } from '../../src-server/contracts/schedules';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { addUser, grantRole, signSession } from '../helpers/sessions';
import { until } from '../helpers/until';

/**
 * Schedules through the API of a real server on a real PostgreSQL, its scheduler ticking every half second. The
 * schedules that fire use the seconds field (SCHEDULES_ALLOW_SECONDS=true), so that a test waits seconds, not minutes.
 */
const SECRET = 'a-session-secret-for-schedule-tests-0123456789';
const API_TOKEN = 'schedules-admin-token-0123456789';
const ENV = {
  AUTH_ENABLED: 'true',
  SESSION_SECRET: SECRET,
  SVC_API_TOKEN: API_TOKEN,
  SCHEDULES_ALLOW_SECONDS: 'true',
  SCHEDULES_POLL_S: '0.5',
  // Fires seconds apart, for members too (docs/schedules.md#limits).
  SCHEDULES_MEMBER_MIN_INTERVAL_S: '1',
  SCHEDULES_OWNER_MIN_INTERVAL_S: '1',
};
const ctx = useIntegrationServer({ server: ENV });

let server: TestServer;
beforeAll(() => {
  server = ctx.server;
  ctx.model.reply(['scheduled ', 'output']);
});

/** A request as `token`'s caller (the API token's administrator without one). */
const as = (token: string | null, path: string, init: { method?: string; json?: unknown } = {}) =>
  server.request(path, { ...init, headers: token ? { authorization: `Bearer ${token}` } : {} });
const json = async <T>(res: Response, status: number): Promise<T> => {
  const body = await res.json();
  expect(res.status, JSON.stringify(body)).toBe(status);
  return body as T;
};

const everyTwoSeconds = { agent: 'summary', cron: '*/2 * * * * *', timezone: 'UTC', message: 'tick' };

async function create(body: Record<string, unknown>, token: string | null = null, project = DEFAULT_PROJECT_ID) {
  return json<Schedule>(await as(token, `/projects/${project}/schedules`, { method: 'POST', json: body }), 201);
}
const fires = async (id: string, token: string | null = null) =>
  json<ScheduleFire[]>(await as(token, `/schedules/${id}/fires`), 200);
const schedule = async (id: string) => json<Schedule>(await as(null, `/schedules/${id}`), 200);

/** A signed-in person with `role` on the default project, and her token. */
async function person(name: string, role: string | null, project = DEFAULT_PROJECT_ID) {
  const id = await addUser(server.pool, name, role ? [['project', project, role]] : []);
  return { id, token: await signSession(id, SECRET, '1h', name) };
}

describe('creating, reading, changing and deleting a schedule', () => {
  it('keeps what was given, shows the next three times, and says who it runs as', async () => {
    const created = await create({
      agent: 'summary',
      cron: '30 2 * * *',
      timezone: 'America/New_York',
      message: 'nightly summary',
      model: 'fake-model',
    });
    expect(created).toMatchObject({
      project_id: DEFAULT_PROJECT_ID,
      agent: 'summary',
      cron: '30 2 * * *',
      timezone: 'America/New_York',
      message: 'nightly summary',
      model: 'fake-model',
      project_path: null,
      thread_id: null,
      catch_up: 'one',
      run_as: { id: '00000000-0000-0000-0000-000000000001', name: 'api-token' },
      paused_at: null,
      paused_reason: null,
      last_fire: null,
    });
    expect(created.next_fire_times).toHaveLength(3);
    expect(created.next_fire_at).toBe(created.next_fire_times[0]);
    for (const time of created.next_fire_times) {
      const local = new Date(time).toLocaleTimeString('en-GB', { timeZone: 'America/New_York', hour12: false });
      // 02:30, or 03:00 on the night 02:30 does not exist.
      expect(['02:30:00', '03:00:00']).toContain(local);
    }
    expect(await schedule(created.id)).toEqual(created);

    const changed = await json<Schedule>(
      await as(null, `/schedules/${created.id}`, {
        method: 'PATCH',
        json: { cron: '0 9 * * 1-5', timezone: 'Europe/Paris', model: null, catch_up: 'none' },
      }),
      200,
    );
    expect(changed).toMatchObject({ cron: '0 9 * * 1-5', timezone: 'Europe/Paris', model: null, catch_up: 'none' });
    expect(changed.message).toBe('nightly summary');
    const paris = new Intl.DateTimeFormat('en-GB', {
      timeZone: 'Europe/Paris',
      weekday: 'short',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    }).format(new Date(changed.next_fire_at!));
    expect(paris).toMatch(/^(Mon|Tue|Wed|Thu|Fri) 09:00$/);

    const listed = await json<Schedule[]>(await as(null, `/projects/${DEFAULT_PROJECT_ID}/schedules`), 200);
    expect(listed.map((s) => s.id)).toContain(created.id);

    const paused = await json<Schedule>(await as(null, `/schedules/${created.id}/pause`, { method: 'POST' }), 200);
    expect(paused).toMatchObject({ paused_reason: 'Paused by api-token.', next_fire_at: null, next_fire_times: [] });
    expect(paused.paused_at).not.toBeNull();
    const resumed = await json<Schedule>(await as(null, `/schedules/${created.id}/resume`, { method: 'POST' }), 200);
    expect(resumed).toMatchObject({ paused_at: null, paused_reason: null });
    expect(new Date(resumed.next_fire_at!).getTime()).toBeGreaterThan(Date.now());

    expect((await as(null, `/schedules/${created.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await as(null, `/schedules/${created.id}`)).status).toBe(404);
  });

  it('refuses a cron or time zone that does not parse, an unknown agent, and a thread of another agent', async () => {
    const refused = async (body: Record<string, unknown>) =>
      (
        await json<{ error: { message: string } }>(
          await as(null, `/projects/${DEFAULT_PROJECT_ID}/schedules`, { method: 'POST', json: body }),
          400,
        )
      ).error.message;
    expect(await refused({ ...everyTwoSeconds, cron: 'every morning' })).toMatch(/^invalid request body: cron: /);
    expect(await refused({ ...everyTwoSeconds, timezone: 'Europe/Atlantis' })).toBe(
      'invalid request body: timezone: "Europe/Atlantis" is not an IANA time zone name, e.g. Europe/Paris',
    );
    expect(await refused({ ...everyTwoSeconds, agent: 'nobody' })).toBe(
      'invalid request body: agent: no agent or command named "nobody" is loaded',
    );
    const thread = await json<{ id: string }>(
      await as(null, '/threads', { method: 'POST', json: { agent: 'review' } }),
      201,
    );
    expect(await refused({ ...everyTwoSeconds, thread_id: thread.id })).toBe(
      `invalid request body: thread_id: thread ${thread.id} belongs to "review", not "summary"`,
    );
  });

  it('previews the next times of a cron in a time zone, for a form', async () => {
    const res = await as(null, '/schedules/next-times?cron=30%202%20*%20*%20*&timezone=America/New_York&count=2');
    const { times, local_times } = await json<{ times: string[]; local_times: string[] }>(res, 200);
    expect(times).toHaveLength(2);
    expect(local_times.every((t) => / 0[23]:[03]0:00 -0[45]:00$/.test(t))).toBe(true);
    const refused = await json<{ error: { message: string } }>(
      await as(null, '/schedules/next-times?cron=nope&timezone=UTC'),
      400,
    );
    expect(refused.error.message).toMatch(/^invalid query parameters: cron: /);
  });
});

describe('firing', () => {
  it('makes one run per occurrence, each in a new thread of the project, as the maker, and pausing stops it', async () => {
    const made = await create({ ...everyTwoSeconds, message: 'fire in new threads' });
    const started = await until(async () => {
      const list = (await fires(made.id)).filter((f) => f.outcome === 'started');
      return list.length >= 3 ? list : undefined;
    });
    expect(new Set(started.map((f) => f.occurrence)).size).toBe(started.length);
    expect(new Set(started.map((f) => f.thread_id)).size).toBe(started.length);
    for (const fire of started) {
      expect(fire).toMatchObject({ kind: 'scheduled', reason: null, fired_by: null });
      expect(new Date(fire.occurrence).getUTCSeconds() % 2).toBe(0);
      const run = await json<{ message: string; agent: string }>(await as(null, `/runs/${fire.run_id}`), 200);
      expect(run).toMatchObject({ message: 'fire in new threads', agent: 'summary' });
    }
    const thread = await json<{ project_id: string }>(await as(null, `/threads/${started[0]!.thread_id}`), 200);
    expect(thread.project_id).toBe(DEFAULT_PROJECT_ID);
    const { rows } = await server.pool.query(`SELECT DISTINCT created_by FROM svc_runs WHERE message = $1`, [
      'fire in new threads',
    ]);
    expect(rows).toEqual([{ created_by: '00000000-0000-0000-0000-000000000001' }]);

    await as(null, `/schedules/${made.id}/pause`, { method: 'POST' });
    const after = (await fires(made.id)).length;
    await new Promise((resolve) => setTimeout(resolve, 4500));
    expect((await fires(made.id)).length).toBe(after);
    // Resumed, it starts again from the next occurrence: the paused ones are not caught up.
    const resumedAt = Date.now();
    await as(null, `/schedules/${made.id}/resume`, { method: 'POST' });
    // A fire is `starting` while its run is admitted, then says how that went.
    const next = await until(async () => {
      const list = await fires(made.id);
      return list.length > after && list[0]!.outcome !== 'starting' ? list[0] : undefined;
    });
    expect(next).toMatchObject({ kind: 'scheduled', outcome: 'started' });
    expect(new Date(next!.occurrence).getTime()).toBeGreaterThan(resumedAt);
    await as(null, `/schedules/${made.id}`, { method: 'DELETE' });
  });

  it('continues a named thread, and records a fire refused because that thread has a run at its gate', async () => {
    ctx.model.reply(['needs a look']);
    const first = await json<{ thread_id: string; run_id: string }>(
      await as(null, '/agents/review/runs', { method: 'POST', json: { message: 'first' } }),
      202,
    );
    await until(async () => {
      const run = await json<{ status: string }>(await as(null, `/runs/${first.run_id}`), 200);
      return run.status === 'waiting_approval' || undefined;
    });
    const made = await create({
      agent: 'review',
      cron: '0 0 1 1 *',
      timezone: 'UTC',
      message: 'again',
      thread_id: first.thread_id,
    });
    const refused = await json<ScheduleFire>(await as(null, `/schedules/${made.id}/run`, { method: 'POST' }), 201);
    expect(refused).toMatchObject({
      kind: 'manual',
      outcome: 'refused',
      run_id: null,
      fired_by: 'api-token',
      reason: `thread ${first.thread_id} has run ${first.run_id} waiting for approval: approve, reject or cancel it first`,
    });
    // A refusal is this occurrence's: the schedule goes on.
    expect((await schedule(made.id)).paused_at).toBeNull();

    await as(null, `/runs/${first.run_id}/cancel`, { method: 'POST', json: {} });
    const ran = await json<ScheduleFire>(await as(null, `/schedules/${made.id}/run`, { method: 'POST' }), 201);
    expect(ran).toMatchObject({ outcome: 'started', thread_id: first.thread_id });
    expect((await fires(made.id)).map((f) => f.outcome)).toEqual(['started', 'refused']);
    expect((await schedule(made.id)).last_fire).toMatchObject({ outcome: 'started', run_id: ran.run_id });
  });

  it("puts a scheduled run's gate in the inbox of the project's members and in its webhooks, as any run's", async () => {
    ctx.model.reply(['a finding']);
    const member = await person('inbox member', 'member');
    // A documentation address (RFC 5737): the delivery is queued and tried, and reaches nobody.
    const hook = await json<{ id: string }>(
      await as(null, '/webhooks', {
        method: 'POST',
        json: { url: 'https://192.0.2.10/schedules', events: ['gate.waiting'], project_id: DEFAULT_PROJECT_ID },
      }),
      201,
    );
    const made = await create({ agent: 'review', cron: '*/2 * * * * *', timezone: 'UTC', message: 'gate me' });
    const fire = await until(async () => (await fires(made.id)).find((f) => f.outcome === 'started'));
    await as(null, `/schedules/${made.id}/pause`, { method: 'POST' });
    const inbox = await until(async () => {
      const items = await json<{ run_id: string }[]>(await as(member.token, '/approvals'), 200);
      return items.find((item) => item.run_id === fire.run_id);
    });
    expect(inbox).toMatchObject({ run_id: fire.run_id, agent: 'review', message: 'gate me' });
    const deliveries = await json<{ event_type: string; payload: { data: { run_id: string } } }[]>(
      await as(null, `/webhooks/${hook.id}/deliveries`),
      200,
    );
    expect(deliveries.find((d) => d.payload.data.run_id === fire.run_id)?.event_type).toBe('gate.waiting');
    await as(null, `/webhooks/${hook.id}`, { method: 'DELETE' });
  });

  it('records a 429 from the local-runtime limit as a refused fire, with its message', async () => {
    const limited = await ctx.start({ ...ENV, LOCAL_LLM_MAX_RUNS_PER_USER: '1', SCHEDULES_POLL_S: '60' });
    try {
      ctx.model.reply(
        Array.from({ length: 100 }, (_, i) => `${i} `),
        50,
      );
      // Her own runs count against her limit, whoever else runs on the server meanwhile.
      const busyPerson = await person('Busy', 'member');
      const call = (path: string, init: { method?: string; json?: unknown } = {}) =>
        limited.request(path, { ...init, headers: { authorization: `Bearer ${busyPerson.token}` } });
      const busy = await json<{ run_id: string }>(
        await call('/agents/summary/runs', { method: 'POST', json: { message: 'keeps the slot' } }),
        202,
      );
      const made = await json<Schedule>(
        await call(`/projects/${DEFAULT_PROJECT_ID}/schedules`, {
          method: 'POST',
          json: { ...everyTwoSeconds, cron: '0 0 1 1 *', message: 'over the limit' },
        }),
        201,
      );
      const fire = await json<ScheduleFire>(await call(`/schedules/${made.id}/run`, { method: 'POST' }), 201);
      expect(fire.outcome).toBe('refused');
      expect(fire.reason).toMatch(/^you have 1 runs on the local runtime already \(at most 1 at once\): wait for one/);
      await call(`/runs/${busy.run_id}/cancel`, { method: 'POST', json: {} });
    } finally {
      await limited.close();
      ctx.model.reply(['scheduled ', 'output']);
    }
  });
});

describe('who may do what', () => {
  it('answers 404 to another tenant, 403 to a viewer who would create or change, and lets the maker and owners change', async () => {
    const org = await json<{ id: string }>(
      await as(null, '/orgs', { method: 'POST', json: { name: 'Other org' } }),
      201,
    );
    const team = await json<{ id: string }>(
      await as(null, '/teams', { method: 'POST', json: { name: 'Other team', parent_id: org.id } }),
      201,
    );
    const other = await json<{ id: string }>(
      await as(null, '/projects', { method: 'POST', json: { name: 'Other project', parent_id: team.id } }),
      201,
    );
    const stranger = await person('stranger', 'admin', other.id);
    const viewer = await person('viewer', 'viewer');
    const maker = await person('maker', 'member');
    const colleague = await person('colleague', 'member');
    const owner = await person('owner', 'owner');

    const made = await create({ ...everyTwoSeconds, cron: '0 0 1 1 *', message: 'mine' }, maker.token);
    expect(made.run_as).toEqual({ id: maker.id, name: 'maker' });

    for (const [method, path] of [
      ['GET', `/schedules/${made.id}`],
      ['GET', `/schedules/${made.id}/fires`],
      ['PATCH', `/schedules/${made.id}`],
      ['POST', `/schedules/${made.id}/pause`],
      ['POST', `/schedules/${made.id}/run`],
      ['DELETE', `/schedules/${made.id}`],
      ['GET', `/projects/${DEFAULT_PROJECT_ID}/schedules`],
    ] as const) {
      const res = await as(stranger.token, path, { method, ...(method === 'PATCH' ? { json: { message: 'x' } } : {}) });
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    // The other tenant's own list does not show it either.
    expect(await json(await as(stranger.token, `/projects/${other.id}/schedules`), 200)).toEqual([]);

    expect((await as(viewer.token, `/schedules/${made.id}`)).status).toBe(200);
    expect((await as(viewer.token, `/projects/${DEFAULT_PROJECT_ID}/schedules`)).status).toBe(200);
    const viewerCreates = await as(viewer.token, `/projects/${DEFAULT_PROJECT_ID}/schedules`, {
      method: 'POST',
      json: everyTwoSeconds,
    });
    expect(viewerCreates.status).toBe(403);
    for (const token of [viewer.token, colleague.token]) {
      const res = await as(token, `/schedules/${made.id}`, { method: 'PATCH', json: { message: 'not yours' } });
      expect(res.status).toBe(403);
      expect((await res.json()).error.message).toMatch(
        /a schedule is changed by the person who made it or by an owner/,
      );
    }

    const byMaker = await json<Schedule>(
      await as(maker.token, `/schedules/${made.id}`, { method: 'PATCH', json: { message: 'still mine' } }),
      200,
    );
    expect(byMaker.run_as.id).toBe(maker.id);
    const byOwner = await json<Schedule>(
      await as(owner.token, `/schedules/${made.id}`, { method: 'PATCH', json: { message: 'the owner words it now' } }),
      200,
    );
    expect(byOwner.run_as).toEqual({ id: owner.id, name: 'owner' });
    expect((await as(maker.token, `/schedules/${made.id}`, { method: 'DELETE' })).status).toBe(403);
    expect((await as(owner.token, `/schedules/${made.id}`, { method: 'DELETE' })).status).toBe(204);
  });
});

describe('a maker who lost her rights', () => {
  it('pauses the schedule at its next fire, with the reason, when her role is removed', async () => {
    const maker = await person('Ada', 'member');
    const made = await create({ ...everyTwoSeconds, message: 'as Ada' }, maker.token);
    await until(async () => (await fires(made.id)).find((f) => f.outcome === 'started'));
    await server.pool.query(`DELETE FROM svc_memberships WHERE user_id = $1`, [maker.id]);
    await grantRole(server.pool, maker.id, 'project', DEFAULT_PROJECT_ID, 'viewer');

    const paused = await until(async () => {
      const s = await schedule(made.id);
      return s.paused_at ? s : undefined;
    });
    const reason =
      'Paused: Ada no longer holds the member role (or higher) on project Default project (her role there is viewer now).';
    expect(paused).toMatchObject({ paused_reason: reason, next_fire_at: null });
    const last = (await fires(made.id))[0]!;
    expect(last).toMatchObject({ kind: 'scheduled', outcome: 'paused', reason, run_id: null });
    // Her runs stopped with it: none is made as her after the pause.
    const { rows } = await server.pool.query(
      `SELECT count(*)::int AS n FROM svc_runs WHERE created_by = $1 AND started_at > $2`,
      [maker.id, last.fired_at],
    );
    expect(rows[0].n).toBe(0);

    // Resuming cannot make her rights come back; someone who may change it takes it over by editing it.
    const resume = await as(null, `/schedules/${made.id}/resume`, { method: 'POST' });
    expect(resume.status).toBe(409);
    expect((await resume.json()).error.message).toMatch(/cannot run as Ada: Ada no longer holds the member role/);
    await as(null, `/schedules/${made.id}`, { method: 'PATCH', json: { message: 'taken over' } });
    const resumed = await json<Schedule>(await as(null, `/schedules/${made.id}/resume`, { method: 'POST' }), 200);
    expect(resumed.run_as.name).toBe('api-token');
    await until(async () => (await fires(made.id))[0]?.outcome === 'started' || undefined);
    await as(null, `/schedules/${made.id}`, { method: 'DELETE' });
  });

  it('pauses when her user is deleted, and when the role came through the organisation and went', async () => {
    const gone = await person('Grace', 'member');
    const viaOrg = await addUser(server.pool, 'Hedy', [['org', DEFAULT_ORG_ID, 'member']]);
    const first = await create({ ...everyTwoSeconds, message: 'as Grace' }, gone.token);
    const second = await create(
      { ...everyTwoSeconds, message: 'as Hedy' },
      await signSession(viaOrg, SECRET, '1h', 'Hedy'),
    );
    await server.pool.query(`DELETE FROM svc_users WHERE id = $1`, [gone.id]);
    await server.pool.query(`DELETE FROM svc_memberships WHERE user_id = $1`, [viaOrg]);
    const reasons = await until(async () => {
      const [a, b] = await Promise.all([schedule(first.id), schedule(second.id)]);
      return a.paused_reason && b.paused_reason ? [a.paused_reason, b.paused_reason] : undefined;
    });
    expect(reasons).toEqual([
      'Paused: the user who made it, Grace, was deleted.',
      'Paused: Hedy no longer holds the member role (or higher) on project Default project (she holds no role there now).',
    ]);
  });
});
