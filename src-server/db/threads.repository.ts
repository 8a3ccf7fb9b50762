import type { RunStatus, Thread } from '../contracts/runs';
import { RUN_SEARCH_DOCUMENT, THREAD_SEARCH_DOCUMENT } from './migrations/0016-thread-search';
import type { Pool } from './pool';

/** What a search of the thread list narrows it to (GET /threads?q=…); every part is optional. */
export interface ThreadFilter {
  /** Words of a run's message or final output, or of the thread's name (websearch syntax: "a phrase", or, -not). */
  q?: string;
  agent?: string;
  /** The status of the run the thread stands at. */
  status?: RunStatus;
  /** Who made the thread. */
  startedBy?: string;
  /** Last active at or after / before. */
  from?: Date;
  to?: Date;
}

/**
 * The filter as SQL conditions on `t` (the thread) and `r` (the run it stands at), numbered after the query's own
 * parameters. The text search reads the two full-text indexes (0016_thread_search) and keeps the threads they name.
 */
function filterSql(filter: ThreadFilter, params: unknown[]): string {
  const parts: string[] = [];
  const param = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  if (filter.q) {
    const query = `websearch_to_tsquery('simple', ${param(filter.q)})`;
    parts.push(
      `t.id IN (SELECT thread_id FROM svc_runs WHERE ${RUN_SEARCH_DOCUMENT} @@ ${query}
                UNION SELECT id FROM svc_threads WHERE ${THREAD_SEARCH_DOCUMENT} @@ ${query})`,
    );
  }
  if (filter.agent) parts.push(`t.agent = ${param(filter.agent)}`);
  if (filter.status) parts.push(`r.status = ${param(filter.status)}`);
  if (filter.startedBy) parts.push(`t.created_by = ${param(filter.startedBy)}`);
  if (filter.from) parts.push(`t.updated_at >= ${param(filter.from)}`);
  if (filter.to) parts.push(`t.updated_at < ${param(filter.to)}`);
  return parts.map((part) => `AND ${part}`).join(' ');
}

interface ThreadRow {
  id: string;
  name: string | null;
  agent: string;
  model: string | null;
  last_message: string | null;
  project_path: string | null;
  project_id: string;
  created_at: Date;
  updated_at: Date;
  last_run_id: string | null;
  last_run_status: RunStatus | null;
  draft: boolean;
  comparison_of: string | null;
  imported_from: string | null;
  imported_exported_at: Date | null;
  imported_at: Date | null;
}

const SELECT_THREAD = `
  SELECT t.id, t.name, t.agent, t.model, t.last_message, t.project_path, t.project_id, t.created_at, t.updated_at,
         t.draft, t.comparison_of, t.imported_from, t.imported_exported_at, t.imported_at,
         r.id AS last_run_id, r.status AS last_run_status
    FROM svc_threads t
    LEFT JOIN LATERAL (
      -- The run the thread stands at: one running or waiting for a decision (a run queued behind it must not hide
      -- the gate it waits at), else the latest.
      SELECT id, status FROM (
        (SELECT id, status, 0 AS rank FROM svc_runs
          WHERE thread_id = t.id AND status IN ('running', 'waiting_approval') ORDER BY started_at DESC LIMIT 1)
        UNION ALL
        (SELECT id, status, 1 FROM svc_runs WHERE thread_id = t.id ORDER BY started_at DESC LIMIT 1)
      ) candidates ORDER BY rank LIMIT 1
    ) r ON true`;

function toThread(row: ThreadRow): Thread {
  return {
    id: row.id,
    name: row.name,
    agent: row.agent,
    model: row.model,
    last_message: row.last_message,
    project_path: row.project_path,
    project_id: row.project_id,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    last_run: row.last_run_id ? { id: row.last_run_id, status: row.last_run_status! } : null,
    draft: row.draft,
    comparison_of: row.comparison_of,
    imported:
      row.imported_from && row.imported_exported_at && row.imported_at
        ? {
            from_thread_id: row.imported_from,
            exported_at: row.imported_exported_at.toISOString(),
            imported_at: row.imported_at.toISOString(),
          }
        : null,
  };
}

export interface NewThread {
  id: string;
  agent: string;
  model: string | null;
  projectPath: string | null;
  projectId: string;
  createdBy: string;
}

/** A thread's place in the list: its updated_at to the microsecond (ISO 8601, `…T09:31:12.123456Z`) and its id. */
export interface ThreadKey {
  at: string;
  id: string;
}

/** A listed thread with its place, and the database's clock when it was read. */
export interface ListedThread {
  thread: Thread;
  key: ThreadKey;
  listedAt: string;
}

/** To the microsecond, as PostgreSQL keeps it: a key cut to milliseconds would skip threads of the same millisecond. */
const MICROS = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;
const KEYED = `${SELECT_THREAD.replace(
  'SELECT t.id,',
  `SELECT to_char(t.updated_at AT TIME ZONE 'UTC', ${MICROS}) AS key_at,
          to_char(now() AT TIME ZONE 'UTC', ${MICROS}) AS listed_at, t.id,`,
)}`;

const listed = (row: ThreadRow & { key_at: string; listed_at: string }): ListedThread => ({
  thread: toThread(row),
  key: { at: row.key_at, id: row.id },
  listedAt: row.listed_at,
});

export function threadsRepository(pool: Pool) {
  return {
    async insert(t: NewThread): Promise<Thread> {
      const { rows } = await pool.query<ThreadRow>(
        `INSERT INTO svc_threads (id, agent, model, project_path, project_id, created_by) VALUES ($1, $2, $3, $4, $5, $6)
         RETURNING id, name, agent, model, last_message, project_path, project_id, created_at, updated_at, draft,
                   comparison_of, imported_from, imported_exported_at, imported_at, NULL::uuid AS last_run_id,
                   NULL::text AS last_run_status`,
        [t.id, t.agent, t.model, t.projectPath, t.projectId, t.createdBy],
      );
      return toThread(rows[0]!);
    },

    async get(id: string): Promise<Thread | undefined> {
      const { rows } = await pool.query<ThreadRow>(`${SELECT_THREAD} WHERE t.id = $1`, [id]);
      return rows[0] && toThread(rows[0]);
    },

    /**
     * Threads last updated at or before `until`, most recent first, after `after` (keyset); `projectIds` null means
     * every project.
     */
    async older(
      projectIds: string[] | null,
      limit: number,
      until: string | null,
      after: ThreadKey | null,
      drafts = false,
      filter: ThreadFilter = {},
    ): Promise<ListedThread[]> {
      const params: unknown[] = [projectIds, until, after?.at ?? null, after?.id ?? null, limit, drafts];
      const { rows } = await pool.query<ThreadRow & { key_at: string; listed_at: string }>(
        `${KEYED}
          WHERE ($1::uuid[] IS NULL OR t.project_id = ANY($1))
            AND ($2::timestamptz IS NULL OR t.updated_at <= $2)
            AND ($3::timestamptz IS NULL OR (t.updated_at, t.id) < ($3, $4::uuid))
            AND ($6 OR NOT t.draft) AND t.experiment_id IS NULL
            ${filterSql(filter, params)}
          ORDER BY t.updated_at DESC, t.id DESC
          LIMIT $5`,
        params,
      );
      return rows.map(listed);
    },

    /** Threads updated after `from`, least recently updated first, after `after` (keyset). */
    async updatedAfter(
      projectIds: string[] | null,
      limit: number,
      from: string,
      after: ThreadKey | null,
      drafts = false,
      filter: ThreadFilter = {},
    ): Promise<ListedThread[]> {
      const params: unknown[] = [projectIds, from, after?.at ?? null, after?.id ?? null, limit, drafts];
      const { rows } = await pool.query<ThreadRow & { key_at: string; listed_at: string }>(
        `${KEYED}
          WHERE ($1::uuid[] IS NULL OR t.project_id = ANY($1))
            AND t.updated_at > $2::timestamptz
            AND ($3::timestamptz IS NULL OR (t.updated_at, t.id) > ($3, $4::uuid))
            AND ($6 OR NOT t.draft) AND t.experiment_id IS NULL
            ${filterSql(filter, params)}
          ORDER BY t.updated_at, t.id
          LIMIT $5`,
        params,
      );
      return rows.map(listed);
    },

    /** Renames a thread; its place in the list (updated_at) stays, as a name is not activity. */
    async rename(id: string, name: string): Promise<void> {
      await pool.query(`UPDATE svc_threads SET name = $2 WHERE id = $1`, [id, name]);
    },

    async delete(id: string): Promise<boolean> {
      const result = await pool.query(`DELETE FROM svc_threads WHERE id = $1`, [id]);
      return (result.rowCount ?? 0) > 0;
    },
  };
}

export type ThreadsRepository = ReturnType<typeof threadsRepository>;
