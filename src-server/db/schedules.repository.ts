import type { CatchUp, FireOutcome, ScheduleFire } from '../contracts/schedules';
import { withTransaction, type Pool } from './pool';

export interface ScheduleRow {
  id: string;
  project_id: string;
  created_by: string;
  created_by_name: string;
  agent: string;
  cron: string;
  timezone: string;
  message: string;
  model: string | null;
  project_path: string | null;
  thread_id: string | null;
  catch_up: CatchUp;
  paused_at: Date | null;
  paused_reason: string | null;
  next_fire_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export type NewSchedule = Omit<ScheduleRow, 'paused_at' | 'paused_reason' | 'created_at' | 'updated_at'>;
export type ScheduleChange = Partial<
  Pick<
    ScheduleRow,
    | 'created_by'
    | 'created_by_name'
    | 'agent'
    | 'cron'
    | 'timezone'
    | 'message'
    | 'model'
    | 'project_path'
    | 'thread_id'
    | 'catch_up'
    | 'next_fire_at'
  >
>;

/** A fire to record when a claim wins: `starting` ones are the runs the claiming process then starts. */
export interface NewFire {
  occurrence: Date;
  kind: ScheduleFire['kind'];
  outcome: FireOutcome;
  reason: string | null;
  firedBy: string | null;
}

/** A fire being started, leased to this process: `runKey` is the id its run gets, whichever process starts it. */
export interface StartingFire {
  scheduleId: string;
  occurrence: Date;
  runKey: string;
}

/** The limit a new schedule (or one that changes hands) would pass, and how many there are already. */
export interface ScheduleLimitReached {
  limit: 'user' | 'project';
  count: number;
}

export interface ScheduleLimits {
  /** SCHEDULES_MAX_PER_USER: schedules one person runs, across projects. */
  perUser: number;
  /** SCHEDULES_MAX_PER_PROJECT. */
  perProject: number;
}

/** What a claim decided for a due schedule, from its row and the database's clock. */
export interface ClaimPlan {
  fires: NewFire[];
  nextFireAt: Date | null;
  /** Set when the schedule cannot go on (its cron no longer parses): it pauses with this reason. */
  pauseReason?: string;
}

/**
 * Advisory-lock classes (beside 7_305_112 to 7_305_117, the migrations', the queue's, the first user's, the webhooks'
 * and the local runtime's) under which a person's and a project's schedules are counted and added to, so that two
 * requests at once never both see room under a limit. A person's lock is always taken before a project's.
 */
const USER_LOCK = 7_305_118;
const PROJECT_LOCK = 7_305_119;

const FIRE_COLUMNS = `f.schedule_id, f.occurrence, f.kind, f.outcome, f.reason, f.run_id, f.thread_id,
  r.status AS run_status, r.error_detail AS run_error, f.fired_at, f.fired_by`;

interface FireRow extends Omit<ScheduleFire, 'occurrence' | 'fired_at'> {
  occurrence: Date;
  fired_at: Date;
}

const toFire = (row: FireRow): ScheduleFire => ({
  ...row,
  occurrence: row.occurrence.toISOString(),
  fired_at: row.fired_at.toISOString(),
});

/** Schedules and their fires (docs/schedules.md). SQL only: the times and the rules are the service's. */
export function schedulesRepository(pool: Pool) {
  return {
    /** Adds the schedule unless its maker or its project has as many as the limits allow already. */
    async insertWithin(schedule: NewSchedule, limits: ScheduleLimits): Promise<ScheduleRow | ScheduleLimitReached> {
      return withTransaction(pool, async (client) => {
        await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [USER_LOCK, schedule.created_by]);
        await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [PROJECT_LOCK, schedule.project_id]);
        const { rows: counted } = await client.query<{ user: number; project: number }>(
          `SELECT (SELECT count(*)::int FROM svc_schedules WHERE created_by = $1) AS user,
                  (SELECT count(*)::int FROM svc_schedules WHERE project_id = $2) AS project`,
          [schedule.created_by, schedule.project_id],
        );
        const { user, project } = counted[0]!;
        if (user >= limits.perUser) return { limit: 'user', count: user };
        if (project >= limits.perProject) return { limit: 'project', count: project };
        const { rows } = await client.query<ScheduleRow>(
          `INSERT INTO svc_schedules (id, project_id, created_by, created_by_name, agent, cron, timezone, message,
                                      model, project_path, thread_id, catch_up, next_fire_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING *`,
          [
            schedule.id,
            schedule.project_id,
            schedule.created_by,
            schedule.created_by_name,
            schedule.agent,
            schedule.cron,
            schedule.timezone,
            schedule.message,
            schedule.model,
            schedule.project_path,
            schedule.thread_id,
            schedule.catch_up,
            schedule.next_fire_at,
          ],
        );
        return rows[0]!;
      });
    },

    async get(id: string): Promise<ScheduleRow | undefined> {
      const { rows } = await pool.query<ScheduleRow>(`SELECT * FROM svc_schedules WHERE id = $1`, [id]);
      return rows[0];
    },

    async listByProject(projectId: string): Promise<ScheduleRow[]> {
      const { rows } = await pool.query<ScheduleRow>(
        `SELECT * FROM svc_schedules WHERE project_id = $1 ORDER BY created_at, id`,
        [projectId],
      );
      return rows;
    },

    /**
     * Changes the schedule, unless it would run as someone (`created_by`) who runs `maxPerUser` others already. Column
     * names come from the keys of ScheduleChange, never from input.
     */
    async update(
      id: string,
      change: ScheduleChange,
      maxPerUser: number,
    ): Promise<ScheduleRow | ScheduleLimitReached | undefined> {
      return withTransaction(pool, async (client) => {
        if (change.created_by) {
          await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [USER_LOCK, change.created_by]);
          const { rows: counted } = await client.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM svc_schedules WHERE created_by = $1 AND id <> $2`,
            [change.created_by, id],
          );
          if (counted[0]!.n >= maxPerUser) return { limit: 'user', count: counted[0]!.n };
        }
        const entries = Object.entries(change).filter(([, value]) => value !== undefined);
        const sets = entries.map(([column], i) => `${column} = $${i + 2}`);
        const { rows } = await client.query<ScheduleRow>(
          `UPDATE svc_schedules SET ${[...sets, 'updated_at = now()'].join(', ')} WHERE id = $1 RETURNING *`,
          [id, ...entries.map(([, value]) => value)],
        );
        return rows[0];
      });
    },

    /** Pauses it unless it is paused already (the first reason stays); answers the row as it is then. */
    async pause(id: string, reason: string): Promise<ScheduleRow | undefined> {
      const { rows } = await pool.query<ScheduleRow>(
        `UPDATE svc_schedules SET paused_at = COALESCE(paused_at, now()), paused_reason = COALESCE(paused_reason, $2),
                next_fire_at = NULL, updated_at = now()
          WHERE id = $1 RETURNING *`,
        [id, reason],
      );
      return rows[0];
    },

    async resume(id: string, nextFireAt: Date | null): Promise<ScheduleRow | undefined> {
      const { rows } = await pool.query<ScheduleRow>(
        `UPDATE svc_schedules SET paused_at = NULL, paused_reason = NULL, next_fire_at = $2, updated_at = now()
          WHERE id = $1 RETURNING *`,
        [id, nextFireAt],
      );
      return rows[0];
    },

    async remove(id: string): Promise<boolean> {
      const result = await pool.query(`DELETE FROM svc_schedules WHERE id = $1`, [id]);
      return (result.rowCount ?? 0) > 0;
    },

    /**
     * Up to `limit` schedules whose next occurrence has come, by the database's clock (the same for every process),
     * in turns across organisations, and inside each across its projects: each organisation's first comes before any
     * organisation's second, so that one organisation's hundreds of due schedules never hold another's back. Answers
     * the clock too: when this look was taken.
     */
    async due(limit: number): Promise<{ ids: string[]; now: Date }> {
      const { rows } = await pool.query<{ ids: string[]; now: Date }>(
        `WITH due AS (
           SELECT s.id, s.project_id, t.org_id, s.next_fire_at
             FROM svc_schedules s
             JOIN svc_projects p ON p.id = s.project_id
             JOIN svc_teams t ON t.id = p.team_id
            WHERE s.paused_at IS NULL AND s.next_fire_at <= now()
         ), in_project AS (
           SELECT id, org_id, next_fire_at,
                  row_number() OVER (PARTITION BY project_id ORDER BY next_fire_at, id) AS turn
             FROM due
         ), in_org AS (
           SELECT id, next_fire_at,
                  row_number() OVER (PARTITION BY org_id ORDER BY turn, next_fire_at, id) AS turn
             FROM in_project
         )
         SELECT ARRAY(SELECT id FROM in_org ORDER BY turn, next_fire_at, id LIMIT $1) AS ids, now() AS now`,
        [limit],
      );
      return rows[0]!;
    },

    /**
     * Claims a due schedule's occurrence for this process: under the row's lock (a process that finds it locked
     * passes it by), `plan` decides from the row and the database's clock; its fires are inserted, each at most once
     * per schedule and occurrence, and next_fire_at moves on, in one transaction. Answers the fires this call
     * inserted: none when another process had claimed it, or it is no longer due.
     */
    async claim(
      id: string,
      process: string,
      plan: (row: ScheduleRow, now: Date) => ClaimPlan,
      leaseS: number,
    ): Promise<{ row: ScheduleRow; fires: NewFire[]; starting: StartingFire[] } | null> {
      return withTransaction(pool, async (client) => {
        const { rows } = await client.query<ScheduleRow & { db_now: Date }>(
          `SELECT *, now() AS db_now FROM svc_schedules
            WHERE id = $1 AND paused_at IS NULL AND next_fire_at <= now()
            FOR UPDATE SKIP LOCKED`,
          [id],
        );
        const found = rows[0];
        if (!found) return null;
        const { db_now: now, ...row } = found;
        const decided = plan(row, now);
        const inserted: NewFire[] = [];
        const starting: StartingFire[] = [];
        for (const fire of decided.fires) {
          const { rows: made } = await client.query<{ run_key: string | null }>(
            `INSERT INTO svc_schedule_fires (schedule_id, occurrence, kind, outcome, reason, fired_by, process, run_key,
                                             lease_until)
             SELECT $1, $2, $3, $4, $5, $6, $7, k.run_key, CASE WHEN k.run_key IS NOT NULL
                                                             THEN now() + make_interval(secs => $8) END
               FROM (SELECT CASE WHEN $4 = 'starting' THEN gen_random_uuid() END AS run_key) k
             ON CONFLICT (schedule_id, occurrence) DO NOTHING RETURNING run_key`,
            [id, fire.occurrence, fire.kind, fire.outcome, fire.reason, fire.firedBy, process, leaseS],
          );
          if (!made[0]) continue;
          inserted.push(fire);
          if (made[0].run_key) starting.push({ scheduleId: id, occurrence: fire.occurrence, runKey: made[0].run_key });
        }
        const { rows: after } = await client.query<ScheduleRow>(
          decided.pauseReason
            ? `UPDATE svc_schedules SET next_fire_at = NULL, paused_at = now(), paused_reason = $2, updated_at = now()
                WHERE id = $1 RETURNING *`
            : `UPDATE svc_schedules SET next_fire_at = $2 WHERE id = $1 RETURNING *`,
          [id, decided.pauseReason ?? decided.nextFireAt],
        );
        return { row: after[0]!, fires: inserted, starting };
      });
    },

    /**
     * A manual fire (Run now), at the database's clock to the millisecond (the precision of the Date that names it
     * again), leased as a claimed one; null in the unlikely case of another in the same millisecond.
     */
    async insertManualFire(id: string, firedBy: string, process: string, leaseS: number): Promise<StartingFire | null> {
      const { rows } = await pool.query<{ occurrence: Date; run_key: string }>(
        `INSERT INTO svc_schedule_fires (schedule_id, occurrence, kind, outcome, fired_by, process, run_key, lease_until)
         VALUES ($1, date_trunc('milliseconds', clock_timestamp()), 'manual', 'starting', $2, $3, gen_random_uuid(),
                 now() + make_interval(secs => $4))
         ON CONFLICT (schedule_id, occurrence) DO NOTHING RETURNING occurrence, run_key`,
        [id, firedBy, process, leaseS],
      );
      return rows[0] ? { scheduleId: id, occurrence: rows[0].occurrence, runKey: rows[0].run_key } : null;
    },

    /**
     * Takes over fires still `starting` whose lease lapsed (the process that claimed them stopped before saying how
     * the start went), leased to `process` now, with whether their run exists already (it began before its process
     * stopped). Each is taken by one process: the row lock, and the lease moved on, leave it to the first.
     */
    async takeOverLapsed(
      process: string,
      leaseS: number,
      limit: number,
    ): Promise<(StartingFire & { runExists: boolean })[]> {
      const { rows } = await pool.query<{
        schedule_id: string;
        occurrence: Date;
        run_key: string;
        run_exists: boolean;
      }>(
        `WITH lapsed AS (
           SELECT schedule_id, occurrence FROM svc_schedule_fires
            WHERE outcome = 'starting' AND lease_until <= now()
            ORDER BY lease_until LIMIT $3
              FOR UPDATE SKIP LOCKED
         )
         UPDATE svc_schedule_fires f SET process = $1, lease_until = now() + make_interval(secs => $2)
           FROM lapsed WHERE f.schedule_id = lapsed.schedule_id AND f.occurrence = lapsed.occurrence
         RETURNING f.schedule_id, f.occurrence, f.run_key,
                   EXISTS (SELECT 1 FROM svc_runs r WHERE r.id = f.run_key) AS run_exists`,
        [process, leaseS, limit],
      );
      return rows.map((row) => ({
        scheduleId: row.schedule_id,
        occurrence: row.occurrence,
        runKey: row.run_key,
        runExists: row.run_exists,
      }));
    },

    /**
     * How a fire's start went. Its run's existence has the last word: a fire whose run (`run_key`) exists is
     * `started`, whatever a process that also tried to start it says (its second start failed on the run's id);
     * otherwise the first outcome recorded stays.
     */
    async settleFire(
      id: string,
      occurrence: Date,
      settled: { outcome: FireOutcome; reason: string | null },
    ): Promise<ScheduleFire | undefined> {
      await pool.query(
        `UPDATE svc_schedule_fires f
            SET outcome = CASE WHEN r.id IS NULL THEN $3 ELSE 'started' END,
                reason = CASE WHEN r.id IS NULL THEN COALESCE($4, f.reason) WHEN f.outcome = 'starting' THEN f.reason END,
                run_id = r.id, thread_id = r.thread_id, lease_until = NULL
           FROM svc_schedule_fires k LEFT JOIN svc_runs r ON r.id = k.run_key
          WHERE k.schedule_id = $1 AND k.occurrence = $2 AND f.schedule_id = $1 AND f.occurrence = $2
            AND (f.outcome = 'starting' OR (r.id IS NOT NULL AND f.run_id IS NULL))`,
        [id, occurrence, settled.outcome, settled.reason],
      );
      return this.fire(id, occurrence);
    },

    async fire(id: string, occurrence: Date): Promise<ScheduleFire | undefined> {
      const { rows } = await pool.query<FireRow>(
        `SELECT ${FIRE_COLUMNS} FROM svc_schedule_fires f LEFT JOIN svc_runs r ON r.id = f.run_id
          WHERE f.schedule_id = $1 AND f.occurrence = $2`,
        [id, occurrence],
      );
      return rows[0] && toFire(rows[0]);
    },

    /** A schedule's fires, newest first, with the status of the run each started. */
    async fires(id: string, limit: number): Promise<ScheduleFire[]> {
      const { rows } = await pool.query<FireRow>(
        `SELECT ${FIRE_COLUMNS} FROM svc_schedule_fires f LEFT JOIN svc_runs r ON r.id = f.run_id
          WHERE f.schedule_id = $1 ORDER BY f.fired_at DESC, f.occurrence DESC LIMIT $2`,
        [id, limit],
      );
      return rows.map(toFire);
    },

    /** The latest fire of each schedule given, by schedule id. */
    async lastFires(ids: string[]): Promise<Map<string, ScheduleFire>> {
      if (!ids.length) return new Map();
      const { rows } = await pool.query<FireRow>(
        `SELECT DISTINCT ON (f.schedule_id) ${FIRE_COLUMNS}
           FROM svc_schedule_fires f LEFT JOIN svc_runs r ON r.id = f.run_id
          WHERE f.schedule_id = ANY($1::uuid[])
          ORDER BY f.schedule_id, f.fired_at DESC, f.occurrence DESC`,
        [ids],
      );
      return new Map(rows.map((row) => [row.schedule_id, toFire(row)]));
    },
  };
}

export type SchedulesRepository = ReturnType<typeof schedulesRepository>;
