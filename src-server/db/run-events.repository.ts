import type { LegEvent, LegHolder } from '../storage/types';
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
 * Events of these types come by the thousand while a node streams: a run of them (consecutive ids of one run, of one
 * type) is stored in one row, so that PostgreSQL stores, indexes and commits a row per batch rather than per token.
 * Readers get them back one by one under their own ids (`after`).
 */
const PACKED_TYPES: ReadonlySet<string> = new Set(['token', 'thinking']);
/** The most events one row holds: a reader starting inside a row reads at most this many events it skips. */
export const MAX_EVENTS_PER_ROW = 128;
/**
 * What joins the events of a row in its `data`: JSON text (as events are serialised, without indentation) never holds
 * a raw newline, so splitting on it gives back each event's text exactly.
 */
const JOIN = '\n';

/** A row of svc_run_events: one event, or a run of them from `seq` to `seqLast`. */
interface EventRow {
  runId: string;
  seq: number;
  seqLast: number | null;
  type: string;
  data: string;
}

/** A row to store, with the leg that stores it. */
interface LegRow extends EventRow {
  holder: LegHolder;
}

/**
 * The rows a batch of events is stored in: each run's events in order, the consecutive ones of a packed type in rows
 * of up to MAX_EVENTS_PER_ROW (an event whose text holds a newline, which JSON.stringify never writes, stays alone).
 * The same batch always gives the same rows, so a batch written again (a retry after a commit whose answer was lost)
 * conflicts with what it stored, row by row.
 */
export function eventRows(events: readonly LegEvent[]): LegRow[] {
  const rows: LegRow[] = [];
  const packs: { row: LegRow; texts: string[] }[] = [];
  /** Per run, the row its next event may join: consecutive ids of one run are one leg's. */
  const open = new Map<string, { row: LegRow; texts: string[] }>();
  for (const event of events) {
    const packable = PACKED_TYPES.has(event.type) && !event.data.includes(JOIN);
    const current = open.get(event.runId);
    if (
      packable &&
      current &&
      current.row.type === event.type &&
      (current.row.seqLast ?? current.row.seq) + 1 === event.seq &&
      current.texts.length < MAX_EVENTS_PER_ROW
    ) {
      current.row.seqLast = event.seq;
      current.texts.push(event.data);
      continue;
    }
    const { runId, seq, type, data, holder } = event;
    const row: LegRow = { runId, seq, seqLast: null, type, data, holder };
    rows.push(row);
    if (packable) {
      const pack = { row, texts: [event.data] };
      packs.push(pack);
      open.set(event.runId, pack);
    } else {
      open.delete(event.runId);
    }
  }
  for (const { row, texts } of packs) row.data = texts.join(JOIN);
  return rows;
}

/**
 * The part of a run-writes statement (run-writes.repository.ts) that stores events: a data-modifying `WITH` query
 * named `stored` returning each new row's run and last event id, so that the statement can announce the new
 * high-water mark of each run on RUN_EVENTS_CHANNEL. Its parameters are appended to `params`.
 */
export function insertEventsQuery(events: readonly LegEvent[], params: unknown[]): string {
  // One JSON parameter rather than an array per column: V8's JSON.stringify escapes the events' texts far faster
  // than the driver's array literals do, and a streaming run's batches are mostly text.
  const rows = JSON.stringify(
    eventRows(events).map((r) => ({
      run_id: r.runId,
      seq: r.seq,
      seq_last: r.seqLast,
      type: r.type,
      data: r.data,
      owner: r.holder.owner,
      attempt: r.holder.attempt,
    })),
  );
  // Only while the run is still the leg's (storage/types.ts RunWriteStore): its attempt, and no other owner. The run's
  // row is read as the statement began: a takeover committed meanwhile is seen by the leg's next batch, and the new leg
  // writes nothing before it has read the last stored event and reserved its ids, round trips later.
  return `stored AS (
    INSERT INTO svc_run_events (run_id, seq, seq_last, type, data)
    SELECT e.run_id, e.seq, e.seq_last, e.type, e.data
      FROM json_to_recordset($${params.push(rows)}::json)
           AS e(run_id uuid, seq integer, seq_last integer, type text, data text, owner text, attempt integer)
      JOIN svc_runs r ON r.id = e.run_id
     WHERE r.attempts = e.attempt AND (r.owner_id IS NULL OR r.owner_id = e.owner)
    ON CONFLICT (run_id, seq) DO NOTHING
    RETURNING run_id, COALESCE(seq_last, seq) AS seq
  )`;
}

/**
 * A page of stored rows as events, oldest first: a row of several events gives each under its own id. Ids at or
 * before `afterSeq` are skipped, as is an id a row before gave already (only a retried write could store one twice),
 * and the page stops at `limit` events.
 */
function eventsOf(rows: readonly Omit<EventRow, 'runId'>[], afterSeq: number, limit: number): StoredEvent[] {
  const events: StoredEvent[] = [];
  let last = afterSeq;
  for (const row of rows) {
    const texts = row.seqLast === null ? [row.data] : row.data.split(JOIN);
    for (let i = 0; i < texts.length && events.length < limit; i++) {
      const seq = row.seq + i;
      if (seq <= last) continue;
      events.push({ seq, type: row.type, data: texts[i]! });
      last = seq;
    }
  }
  return events;
}

/**
 * A run's event stream in PostgreSQL (svc_run_events): the source of truth for every client that is not
 * attached to the executing process. Rows are written with the rest of a run's records (run-writes.repository.ts).
 */
export function runEventsRepository(pool: Pool) {
  return {
    /** Events after `afterSeq`, oldest first, at most `limit`. */
    async after(runId: string, afterSeq: number, limit = EVENT_PAGE): Promise<StoredEvent[]> {
      // The rows that hold events after `afterSeq` (the first may begin before it), up to the one that brings the
      // page to `limit` events: `through` counts the page's events to the end of each row, so that a page of rows of
      // many events is not read whole to be cut.
      const { rows } = await pool.query<Omit<EventRow, 'runId'>>(
        `SELECT seq, seq_last AS "seqLast", type, data FROM (
           SELECT seq, seq_last, type, data, COALESCE(seq_last, seq) - GREATEST(seq - 1, $2) AS n,
                  sum(COALESCE(seq_last, seq) - GREATEST(seq - 1, $2)) OVER (ORDER BY seq) AS through
             FROM svc_run_events
            WHERE run_id = $1 AND seq > $2 - ${MAX_EVENTS_PER_ROW} AND COALESCE(seq_last, seq) > $2
            ORDER BY seq LIMIT $3) page
          WHERE through - n < $3
          ORDER BY seq`,
        [runId, afterSeq, limit],
      );
      return eventsOf(rows, afterSeq, limit);
    },

    async lastSeq(runId: string): Promise<number> {
      const { rows } = await pool.query<{ seq: number | null }>(
        `SELECT max(COALESCE(seq_last, seq)) AS seq FROM svc_run_events WHERE run_id = $1`,
        [runId],
      );
      return rows[0]?.seq ?? 0;
    },

    /** Drops the events of runs that finished more than `days` ago; the runs and their node rows stay. */
    async prune(days: number): Promise<number> {
      const { rows } = await pool.query<{ n: number }>(
        `WITH dropped AS (
           DELETE FROM svc_run_events e USING svc_runs r
            -- An imported run's events are counted from its import (GREATEST ignores a NULL).
            WHERE e.run_id = r.id AND GREATEST(r.finished_at, r.imported_at) < now() - make_interval(days => $1)
           RETURNING COALESCE(e.seq_last - e.seq + 1, 1) AS n)
         SELECT COALESCE(sum(n), 0)::integer AS n FROM dropped`,
        [days],
      );
      return rows[0]?.n ?? 0;
    },
  };
}

export type RunEventsRepository = ReturnType<typeof runEventsRepository>;
