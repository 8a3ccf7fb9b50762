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

/** What a claim decided for a due schedule, from its row and the database's clock. */
export interface ClaimPlan {
  fires: NewFire[];
  nextFireAt: Date | null;
  /** Set when the schedule cannot go on (its cron no longer parses): it pauses with this reason. */
  pauseReason?: string;
}

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
    async insert(schedule: NewSchedule): Promise<ScheduleRow> {
      const { rows } = await pool.query<ScheduleRow>(
        `INSERT INTO svc_schedules (id, project_id, created_by, created_by_name, agent, cron, timezone, message, model,
                                    project_path, thread_id, catch_up, next_fire_at)
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

    /** Column names come from the keys of ScheduleChange, never from input. */
    async update(id: string, change: ScheduleChange): Promise<ScheduleRow | undefined> {
      const entries = Object.entries(change).filter(([, value]) => value !== undefined);
      const sets = entries.map(([column], i) => `${column} = $${i + 2}`);
      const { rows } = await pool.query<ScheduleRow>(
        `UPDATE svc_schedules SET ${[...sets, 'updated_at = now()'].join(', ')} WHERE id = $1 RETURNING *`,
        [id, ...entries.map(([, value]) => value)],
      );
      return rows[0];
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

    /** Schedules whose next occurrence has come, by the database's clock (the same for every process). */
    async due(limit: number): Promise<string[]> {
      const { rows } = await pool.query<{ id: string }>(
        `SELECT id FROM svc_schedules WHERE paused_at IS NULL AND next_fire_at <= now()
          ORDER BY next_fire_at LIMIT $1`,
        [limit],
      );
      return rows.map((r) => r.id);
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
    ): Promise<{ row: ScheduleRow; fires: NewFire[] } | null> {
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
        for (const fire of decided.fires) {
          const result = await client.query(
            `INSERT INTO svc_schedule_fires (schedule_id, occurrence, kind, outcome, reason, fired_by, process)
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (schedule_id, occurrence) DO NOTHING`,
            [id, fire.occurrence, fire.kind, fire.outcome, fire.reason, fire.firedBy, process],
          );
          if (result.rowCount) inserted.push(fire);
        }
        const { rows: after } = await client.query<ScheduleRow>(
          decided.pauseReason
            ? `UPDATE svc_schedules SET next_fire_at = NULL, paused_at = now(), paused_reason = $2, updated_at = now()
                WHERE id = $1 RETURNING *`
            : `UPDATE svc_schedules SET next_fire_at = $2 WHERE id = $1 RETURNING *`,
          [id, decided.pauseReason ?? decided.nextFireAt],
        );
        return { row: after[0]!, fires: inserted };
      });
    },

    /**
     * A manual fire (Run now), at the database's clock to the millisecond (the precision of the Date that names it
     * again); null in the unlikely case of another in the same millisecond.
     */
    async insertManualFire(id: string, firedBy: string, process: string): Promise<Date | null> {
      const { rows } = await pool.query<{ occurrence: Date }>(
        `INSERT INTO svc_schedule_fires (schedule_id, occurrence, kind, outcome, fired_by, process)
         VALUES ($1, date_trunc('milliseconds', clock_timestamp()), 'manual', 'starting', $2, $3)
         ON CONFLICT (schedule_id, occurrence) DO NOTHING RETURNING occurrence`,
        [id, firedBy, process],
      );
      return rows[0]?.occurrence ?? null;
    },

    /** How a fire's start went. */
    async settleFire(
      id: string,
      occurrence: Date,
      settled: { outcome: FireOutcome; reason: string | null; runId?: string; threadId?: string },
    ): Promise<ScheduleFire | undefined> {
      await pool.query(
        `UPDATE svc_schedule_fires SET outcome = $3, reason = COALESCE($4, reason), run_id = $5, thread_id = $6
          WHERE schedule_id = $1 AND occurrence = $2`,
        [id, occurrence, settled.outcome, settled.reason, settled.runId ?? null, settled.threadId ?? null],
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
