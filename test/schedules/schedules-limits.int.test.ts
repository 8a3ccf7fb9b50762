import { beforeAll, describe, expect, it } from 'vitest';
import type { Schedule, ScheduleFire } from '../../src-server/contracts/schedules';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { addUser, grantRole, signSession } from '../helpers/sessions';
import { until } from '../helpers/until';

/**
 * The limits on schedules, and the scheduler's turns between organisations, on a real server whose scheduler looks
 * every second. The limits of people and projects are the defaults (50 and 200); members may schedule fires 10 s
 * apart here and owners 5 s (seconds allowed), so that the test waits seconds, not minutes.
 */
const SECRET = 'a-session-secret-for-schedule-limit-tests-0123';
const API_TOKEN = 'schedule-limits-admin-token-0123456789';
const POLL_S = 1;
const ENV = {
  AUTH_ENABLED: 'true',
  SESSION_SECRET: SECRET,
  SVC_API_TOKEN: API_TOKEN,
  SCHEDULES_ALLOW_SECONDS: 'true',
  SCHEDULES_POLL_S: String(POLL_S),
  SCHEDULES_MEMBER_MIN_INTERVAL_S: '10',
  SCHEDULES_OWNER_MIN_INTERVAL_S: '5',
};
const PER_USER = 50;
const PER_PROJECT = 200;
/** Due schedules a process claims between two looks at what is due (schedules.service.ts). */
const CLAIM_BATCH = 10;
const ctx = useIntegrationServer({ server: ENV });

let server: TestServer;
const as = (token: string | null, path: string, init: { method?: string; json?: unknown } = {}) =>
  server.request(path, { ...init, headers: token ? { authorization: `Bearer ${token}` } : {} });
const json = async <T>(res: Response, status: number): Promise<T> => {
  const body = await res.json();
  expect(res.status, JSON.stringify(body)).toBe(status);
  return body as T;
};
const refusal = async (res: Response, status: number) =>
  (await json<{ error: { code: string; message: string } }>(res, status)).error;

/** Every ten seconds: the closest a member may schedule here. */
const everyTenSeconds = { agent: 'summary', cron: '*/10 * * * * *', timezone: 'UTC' };
const create = (token: string, project: string, body: Record<string, unknown>) =>
  as(token, `/projects/${project}/schedules`, { method: 'POST', json: body });

/** A project in an organisation of its own. */
async function project(name: string): Promise<string> {
  const org = await json<{ id: string }>(await as(null, '/orgs', { method: 'POST', json: { name } }), 201);
  const team = await json<{ id: string }>(
    await as(null, '/teams', { method: 'POST', json: { name, parent_id: org.id } }),
    201,
  );
  const made = await json<{ id: string }>(
    await as(null, '/projects', { method: 'POST', json: { name, parent_id: team.id } }),
    201,
  );
  return made.id;
}

async function person(name: string, projectId: string, role: string) {
  const id = await addUser(server.pool, name, [['project', projectId, role]]);
  return { id, token: await signSession(id, SECRET, '1h', name) };
}

let crowded: string;
let quiet: string;
let crowd: { id: string; token: string }[];
let quietMember: { id: string; token: string };
let quietSchedule: Schedule;

beforeAll(async () => {
  server = ctx.server;
  ctx.model.reply(['on ', 'time']);
  crowded = await project('Crowded');
  quiet = await project('Quiet');
  // Four members of one organisation's project, each at her limit: the project at its own, every schedule every ten
  // seconds, all due at the same instants. Each continues its maker's thread, whose run waits at its gate: every fire
  // is claimed and refused (409) with no run to execute, so that the scheduler's own work is all this test adds to the
  // machine's two cores, which other test files share.
  crowd = await Promise.all([1, 2, 3, 4].map((n) => person(`crowd ${n}`, crowded, 'member')));
  await Promise.all(
    crowd.map(async (member, m) => {
      const waiting = await json<{ run_id: string; thread_id: string }>(
        await as(member.token, '/agents/review/runs', {
          method: 'POST',
          json: { message: 'at the gate', project_id: crowded },
        }),
        202,
      );
      await until(async () => {
        const run = await json<{ status: string }>(await as(member.token, `/runs/${waiting.run_id}`), 200);
        return run.status === 'waiting_approval' || undefined;
      });
      const body = { agent: 'review', cron: everyTenSeconds.cron, timezone: 'UTC', thread_id: waiting.thread_id };
      for (let i = 0; i < PER_USER; i++) {
        await json(await create(member.token, crowded, { ...body, message: `crowd ${m}.${i}` }), 201);
      }
    }),
  );
  quietMember = await person('quiet member', quiet, 'member');
  quietSchedule = await json<Schedule>(
    await create(quietMember.token, quiet, { ...everyTenSeconds, message: 'quiet tick' }),
    201,
  );
}, 120_000);

describe('members of one organisation at their schedule limits', () => {
  it("leave another organisation's fires on time: scheduled, within a poll and a second of their time", async () => {
    const fires = await until(async () => {
      const list = await json<ScheduleFire[]>(await as(quietMember.token, `/schedules/${quietSchedule.id}/fires`), 200);
      const settled = list.filter((f) => f.outcome !== 'starting');
      return settled.length >= 3 ? settled.slice(0, 3) : undefined;
    }, 60_000);
    for (const fire of fires) {
      const lateMs = new Date(fire.fired_at).getTime() - new Date(fire.occurrence).getTime();
      expect(fire, `${lateMs} ms late`).toMatchObject({ kind: 'scheduled', outcome: 'started', reason: null });
      expect(lateMs).toBeGreaterThanOrEqual(0);
      expect(lateMs).toBeLessThanOrEqual((POLL_S + 1) * 1000);
      // The crowd's two hundred were due no later. A crowd schedule not claimed between the occurrence and this claim
      // was still due then: it went first past all of them but the batch under way and one in its own.
      const { rows } = await server.pool.query<{ overtaken: number }>(
        `SELECT count(*)::int AS overtaken FROM svc_schedules s
          WHERE s.project_id = $1 AND NOT EXISTS (
                  SELECT 1 FROM svc_schedule_fires f
                   WHERE f.schedule_id = s.id AND f.fired_at >= $2 AND f.fired_at < $3)`,
        [crowded, fire.occurrence, fire.fired_at],
      );
      expect(rows[0]!.overtaken).toBeGreaterThanOrEqual(PER_PROJECT - CLAIM_BATCH - 1);
    }
  }, 90_000);

  it('are refused one more, as their project is, with which limit, how many, and what to do', async () => {
    const [first, second] = crowd;
    const one = await refusal(await create(first!.token, crowded, { ...everyTenSeconds, message: 'one more' }), 409);
    expect(one).toEqual({
      code: 'conflict',
      message:
        'you run 50 schedules already, the most one person may (SCHEDULES_MAX_PER_USER=50): delete one you no ' +
        'longer need',
    });
    // Someone with room of her own finds the project full.
    const owner = await person('crowded owner', crowded, 'owner');
    const full = await refusal(await create(owner.token, crowded, { ...everyTenSeconds, message: 'one more' }), 409);
    expect(full.message).toBe(
      'project Crowded has 200 schedules already, the most one project may have (SCHEDULES_MAX_PER_PROJECT=200): ' +
        'delete one it no longer needs',
    );

    // Room made by deleting three; six asked at once: three are made, and the limit still holds.
    const mine = (await json<Schedule[]>(await as(second!.token, `/projects/${crowded}/schedules`), 200)).filter(
      (s) => s.run_as.id === second!.id,
    );
    for (const schedule of mine.slice(0, 3)) {
      expect((await as(second!.token, `/schedules/${schedule.id}`, { method: 'DELETE' })).status).toBe(204);
    }
    const burst = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        create(second!.token, crowded, { ...everyTenSeconds, message: `again ${i}` }),
      ),
    );
    expect(burst.map((res) => res.status).sort()).toEqual([201, 201, 201, 409, 409, 409]);
    const { rows } = await server.pool.query(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE created_by = $2)::int AS hers
         FROM svc_schedules WHERE project_id = $1`,
      [crowded, second!.id],
    );
    expect(rows[0]).toEqual({ n: PER_PROJECT, hers: PER_USER });

    // Changing someone else's schedule makes it run as you: not past your own limit.
    await grantRole(server.pool, first!.id, 'project', quiet, 'owner');
    const takeOver = await refusal(
      await as(first!.token, `/schedules/${quietSchedule.id}`, { method: 'PATCH', json: { message: 'mine now' } }),
      409,
    );
    expect(takeOver.message).toBe(
      'changing it would make it run as you, and you run 50 schedules already, the most one person may ' +
        '(SCHEDULES_MAX_PER_USER=50): delete one you no longer need, or ask the person it runs as to change it',
    );
  });

  it('may not schedule fires closer than their role allows, when making or changing a schedule', async () => {
    const tooClose = await refusal(
      await create(quietMember.token, quiet, { ...everyTenSeconds, cron: '*/5 * * * * *', message: 'too close' }),
      400,
    );
    expect(tooClose).toMatchObject({
      code: 'invalid_request',
      message:
        'invalid request body: cron: its fires come 5 seconds apart, and a member of its project may schedule fires ' +
        'no closer than 10 seconds apart (SCHEDULES_MEMBER_MIN_INTERVAL_S=10): space its times further apart, or ask ' +
        'an owner of the project to make it',
    });
    // Close only once a day is close all the same, and a change is held to it as a new schedule is.
    const changed = await refusal(
      await as(quietMember.token, `/schedules/${quietSchedule.id}`, {
        method: 'PATCH',
        json: { cron: '0,5 0 9 * * *' },
      }),
      400,
    );
    expect(changed.message).toMatch(/^invalid request body: cron: its fires come 5 seconds apart, and a member /);

    const owner = await person('quiet owner', quiet, 'owner');
    await json(await create(owner.token, quiet, { ...everyTenSeconds, cron: '*/5 * * * * *', message: 'owner' }), 201);
    const ownerTooClose = await refusal(
      await create(owner.token, quiet, { ...everyTenSeconds, cron: '*/2 * * * * *', message: 'owner, closer' }),
      400,
    );
    expect(ownerTooClose.message).toBe(
      'invalid request body: cron: its fires come 2 seconds apart, and an owner or admin of its project may schedule ' +
        'fires no closer than 5 seconds apart (SCHEDULES_OWNER_MIN_INTERVAL_S=5): space its times further apart',
    );
  });
});
