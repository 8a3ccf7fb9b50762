import type { Pool } from './pool';

/** The channel on which a process announces `<run_id>:<last stored seq>` after it stores events. */
export const RUN_EVENTS_CHANNEL = 'svc_run_events';

/** One stored event: the id clients saw (`seq`), its type and the JSON text exactly as it was sent. */
export interface StoredEvent {
  seq: number;
  type: string;
  data: string;
}

export interface NewEvent extends StoredEvent {
  runId: string;
}

/** Events of a run read in pages this large, so a long run is never read into memory at once. */
export const EVENT_PAGE = 2000;

/**
 * The part of a run-writes statement (run-writes.repository.ts) that stores events: a data-modifying `WITH` query
 * named `stored` returning each new event's run and id, so that the statement can announce the new high-water mark
 * of each run on RUN_EVENTS_CHANNEL. Its parameters are appended to `params`.
 */
export function insertEventsQuery(events: readonly NewEvent[], params: unknown[]): string {
  const $ = (values: unknown[]) => `$${params.push(values)}`;
  return `stored AS (
    INSERT INTO svc_run_events (run_id, seq, type, data)
    SELECT * FROM unnest(${$(events.map((e) => e.runId))}::uuid[], ${$(events.map((e) => e.seq))}::integer[],
                         ${$(events.map((e) => e.type))}::text[], ${$(events.map((e) => e.data))}::text[])
    ON CONFLICT (run_id, seq) DO NOTHING
    RETURNING run_id, seq
  )`;
}

/**
 * A run's event stream in PostgreSQL (svc_run_events): the source of truth for every client that is not
 * attached to the executing process. Rows are written with the rest of a run's records (run-writes.repository.ts).
 */
export function runEventsRepository(pool: Pool) {
  return {
    /** Events after `afterSeq`, oldest first, at most `limit`. */
    async after(runId: string, afterSeq: number, limit = EVENT_PAGE): Promise<StoredEvent[]> {
      const { rows } = await pool.query<StoredEvent>(
        `SELECT seq, type, data FROM svc_run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
        [runId, afterSeq, limit],
      );
      return rows;
    },

    async lastSeq(runId: string): Promise<number> {
      const { rows } = await pool.query<{ seq: number | null }>(
        `SELECT max(seq) AS seq FROM svc_run_events WHERE run_id = $1`,
        [runId],
      );
      return rows[0]?.seq ?? 0;
    },

    /** The run's last stored event (its id and type), if any. */
    async latest(runId: string): Promise<{ seq: number; type: string } | undefined> {
      const { rows } = await pool.query<{ seq: number; type: string }>(
        `SELECT seq, type FROM svc_run_events WHERE run_id = $1 ORDER BY seq DESC LIMIT 1`,
        [runId],
      );
      return rows[0];
    },

    /** Drops the events of runs that finished more than `days` ago; the runs and their node rows stay. */
    async prune(days: number): Promise<number> {
      const result = await pool.query(
        `DELETE FROM svc_run_events e USING svc_runs r
          WHERE e.run_id = r.id AND r.finished_at < now() - make_interval(days => $1)`,
        [days],
      );
      return result.rowCount ?? 0;
    },
  };
}

export type RunEventsRepository = ReturnType<typeof runEventsRepository>;
