import { describe, expect, it } from 'vitest';
import type { Schedule, ScheduleFire } from '../../src-server/contracts/schedules';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { useIntegrationServer } from '../helpers/integration';
import { until } from '../helpers/until';

/** A server of its own (every process on one database fires its schedules): authentication off on all of them. */
const ctx = useIntegrationServer({
  server: {
    AUTH_ENABLED: 'false',
    SCHEDULES_ALLOW_SECONDS: 'true',
    SCHEDULES_POLL_S: '0.5',
    // The anonymous administrator's schedules fire seconds apart.
    SCHEDULES_OWNER_MIN_INTERVAL_S: '1',
  },
});

describe('schedules with authentication off', () => {
  it('run as the anonymous administrator, who everyone is then', async () => {
    ctx.model.reply(['anonymous output']);
    const res = await ctx.server.request(`/projects/${DEFAULT_PROJECT_ID}/schedules`, {
      method: 'POST',
      json: { agent: 'summary', cron: '*/2 * * * * *', timezone: 'UTC', message: 'anonymous tick' },
    });
    expect(res.status).toBe(201);
    const made = (await res.json()) as Schedule;
    expect(made.run_as).toEqual({ id: '00000000-0000-0000-0000-000000000000', name: 'anonymous' });
    const fire = await until(async () => {
      const list = (await (await ctx.server.request(`/schedules/${made.id}/fires`)).json()) as ScheduleFire[];
      return list.find((f) => f.outcome === 'started');
    });
    const { rows } = await ctx.server.pool.query(`SELECT created_by FROM svc_runs WHERE id = $1`, [fire.run_id]);
    expect(rows[0].created_by).toBe('00000000-0000-0000-0000-000000000000');
  });

  it('pauses a schedule the anonymous administrator made once authentication is on, saying why', async () => {
    const res = await ctx.server.request(`/projects/${DEFAULT_PROJECT_ID}/schedules`, {
      method: 'POST',
      json: { agent: 'summary', cron: '*/2 * * * * *', timezone: 'UTC', message: 'before auth' },
    });
    const made = (await res.json()) as Schedule;
    await ctx.server.close();
    const secured = await ctx.start({
      AUTH_ENABLED: 'true',
      SVC_API_TOKEN: 'schedules-auth-on-token-0123456789',
      SCHEDULES_ALLOW_SECONDS: 'true',
      SCHEDULES_POLL_S: '0.5',
    });
    const paused = await until(async () => {
      const schedule = (await (await secured.request(`/schedules/${made.id}`)).json()) as Schedule;
      return schedule.paused_reason ?? undefined;
    });
    expect(paused).toBe(
      'Paused: it was made with authentication off, as the anonymous administrator, and authentication is on now: ' +
        'someone who may change it should edit it to run it as herself.',
    );
  });
});
