import { MAX_USAGE_ROWS, type CallTotals, type UsageFigures, type UsageGroup, type UsageRow } from '../contracts/usage';
import type { ModelCallRecord, ModelCallWrite } from '../storage/types';
import type { Pool } from './pool';

/** Whose calls a totals query counts: every call, or all of some projects' and the caller's own in others. */
export type UsageVisibility =
  { all: true } | { all: false; ownedProjects: string[]; ownProjects: string[]; userId: string };

export interface UsageFilter {
  from: Date;
  to: Date;
  groupBy: UsageGroup[];
  projectId?: string;
  orgId?: string;
  visibility: UsageVisibility;
}

/** Each group key: the columns it selects and groups by (fixed text, never the caller's). */
const GROUPS: Record<UsageGroup, { select: string; group: string[]; join?: string }> = {
  run: { select: 'c.run_id', group: ['c.run_id'] },
  phase: { select: 'c.node_id AS phase', group: ['c.node_id'] },
  agent: { select: 'c.agent', group: ['c.agent'] },
  model: { select: 'c.model', group: ['c.model'] },
  project: {
    select: 'c.project_id, p.name AS project_name',
    group: ['c.project_id', 'p.name'],
    join: 'LEFT JOIN svc_projects p ON p.id = c.project_id',
  },
  user: {
    select: 'c.user_id, COALESCE(u.name, u.email) AS user_name',
    group: ['c.user_id', 'u.name', 'u.email'],
    join: 'LEFT JOIN svc_users u ON u.id = c.user_id',
  },
  day: {
    select: `to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day`,
    group: [`to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')`],
  },
  hour: {
    select: `to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24":00Z"') AS hour`,
    group: [`to_char(c.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24":00Z"')`],
  },
};

const FIGURES = `count(DISTINCT c.run_id)::int AS runs, count(*)::int AS calls,
  COALESCE(sum(c.input_tokens), 0)::float8 AS input_tokens,
  COALESCE(sum(c.output_tokens), 0)::float8 AS output_tokens,
  sum(c.cost_usd)::float8 AS cost_usd, (count(*) FILTER (WHERE c.cost_usd IS NULL))::int AS unpriced_calls,
  avg(c.duration_ms)::float8 AS avg_duration_ms, avg(c.generation_ms)::float8 AS avg_generation_ms,
  avg(c.load_ms)::float8 AS avg_load_ms, avg(c.queue_wait_ms)::float8 AS avg_queue_wait_ms`;

/** Per run or phase; count(c.id) rather than count(*): a run without calls is one row of the outer join. */
const TOTALS = `count(c.id)::int AS calls, COALESCE(sum(c.input_tokens), 0)::float8 AS input_tokens,
  COALESCE(sum(c.output_tokens), 0)::float8 AS output_tokens, sum(c.cost_usd)::float8 AS cost_usd,
  (count(c.id) FILTER (WHERE c.cost_usd IS NULL))::int AS unpriced_calls, sum(c.duration_ms)::float8 AS duration_ms,
  sum(c.generation_ms)::float8 AS generation_ms, sum(c.load_ms)::float8 AS load_ms,
  sum(c.queue_wait_ms)::float8 AS queue_wait_ms`;

interface CallRow {
  id: string;
  run_id: string;
  node_id: string;
  project_id: string;
  user_id: string | null;
  agent: string;
  provider: string;
  model: string;
  input_tokens: number | null;
  output_tokens: number | null;
  duration_ms: number;
  load_ms: number | null;
  generation_ms: number | null;
  queue_wait_ms: number | null;
  input_per_mtok: number | null;
  output_per_mtok: number | null;
  cost_usd: number | null;
}

/**
 * The part of a run-writes statement (run-writes.repository.ts) that stores model calls (svc_model_calls), each once
 * under its id. A call takes its project, user and agent from its run, in the same statement: it cannot name another
 * run's, and a call whose run no longer exists is left out. Its parameters are appended to `params`.
 */
export function insertModelCallsQuery(calls: readonly ModelCallWrite[], params: unknown[]): string {
  const $ = (values: unknown[]) => `$${params.push(values)}`;
  return `calls AS (
    INSERT INTO svc_model_calls (id, run_id, node_id, project_id, user_id, agent, provider, model, input_tokens,
                                 output_tokens, duration_ms, load_ms, generation_ms, queue_wait_ms,
                                 input_per_mtok, output_per_mtok, cost_usd)
    SELECT c.id, c.run_id, c.node, t.project_id, r.created_by, r.agent, c.provider, c.model, c.input_tokens,
           c.output_tokens, c.duration_ms, c.load_ms, c.generation_ms, c.queue_wait_ms, c.input_per_mtok,
           c.output_per_mtok, c.cost_usd
      FROM unnest(${$(calls.map((c) => c.id))}::uuid[], ${$(calls.map((c) => c.runId))}::uuid[],
                  ${$(calls.map((c) => c.node))}::text[], ${$(calls.map((c) => c.provider))}::text[],
                  ${$(calls.map((c) => c.model))}::text[], ${$(calls.map((c) => c.inputTokens))}::integer[],
                  ${$(calls.map((c) => c.outputTokens))}::integer[], ${$(calls.map((c) => c.durationMs))}::float8[],
                  ${$(calls.map((c) => c.loadMs))}::float8[], ${$(calls.map((c) => c.generationMs))}::float8[],
                  ${$(calls.map((c) => c.queueWaitMs))}::float8[], ${$(calls.map((c) => c.inputPerMtok))}::numeric[],
                  ${$(calls.map((c) => c.outputPerMtok))}::numeric[], ${$(calls.map((c) => c.costUsd))}::numeric[])
           AS c(id, run_id, node, provider, model, input_tokens, output_tokens, duration_ms, load_ms,
                generation_ms, queue_wait_ms, input_per_mtok, output_per_mtok, cost_usd)
      JOIN svc_runs r ON r.id = c.run_id
      JOIN svc_threads t ON t.id = r.thread_id
    ON CONFLICT (id) DO NOTHING
  )`;
}

/**
 * Model calls (svc_model_calls): the engine's ModelCallStore (ofRun; they are written by run-writes.repository.ts),
 * and the totals of the usage accounting.
 */
export function modelCallsRepository(pool: Pool) {
  return {
    async ofRun(runId: string): Promise<ModelCallRecord[]> {
      const { rows } = await pool.query<CallRow>(
        `SELECT id, run_id, node_id, project_id, user_id, agent, provider, model, input_tokens, output_tokens,
                duration_ms, load_ms, generation_ms, queue_wait_ms, input_per_mtok::float8, output_per_mtok::float8,
                cost_usd::float8
           FROM svc_model_calls WHERE run_id = $1 ORDER BY created_at, id`,
        [runId],
      );
      return rows.map((r) => ({
        id: r.id,
        runId: r.run_id,
        node: r.node_id,
        projectId: r.project_id,
        userId: r.user_id,
        agent: r.agent,
        provider: r.provider,
        model: r.model,
        inputTokens: r.input_tokens,
        outputTokens: r.output_tokens,
        durationMs: r.duration_ms,
        loadMs: r.load_ms,
        generationMs: r.generation_ms,
        queueWaitMs: r.queue_wait_ms,
        inputPerMtok: r.input_per_mtok,
        outputPerMtok: r.output_per_mtok,
        costUsd: r.cost_usd,
      }));
    },

    /** The totals of the calls the filter lets through, one row per group, and their grand total. */
    async totals(filter: UsageFilter): Promise<{ rows: UsageRow[]; truncated: boolean; total: UsageFigures }> {
      const groups = filter.groupBy.map((key) => GROUPS[key]);
      const joins = groups.flatMap((g) => (g.join ? [g.join] : [])).join(' ');
      const { visibility: seen } = filter;
      const where = `c.created_at >= $1 AND c.created_at < $2
         AND ($3::uuid IS NULL OR c.project_id = $3)
         AND ($4::uuid IS NULL OR c.project_id IN (SELECT p2.id FROM svc_projects p2 JOIN svc_teams t2
                                                      ON t2.id = p2.team_id WHERE t2.org_id = $4))
         AND ($5::boolean OR c.project_id = ANY($6::uuid[])
              OR (c.project_id = ANY($7::uuid[]) AND c.user_id = $8::uuid))`;
      const values = [
        filter.from,
        filter.to,
        filter.projectId ?? null,
        filter.orgId ?? null,
        seen.all,
        seen.all ? [] : seen.ownedProjects,
        seen.all ? [] : seen.ownProjects,
        seen.all ? null : seen.userId,
      ];
      const grouped = groups.length
        ? pool.query<UsageRow>(
            `SELECT ${groups.map((g) => g.select).join(', ')}, ${FIGURES}
               FROM svc_model_calls c ${joins}
              WHERE ${where}
              GROUP BY ${groups.flatMap((g) => g.group).join(', ')}
              ORDER BY ${groups.flatMap((g) => g.group).join(', ')}
              LIMIT ${MAX_USAGE_ROWS + 1}`,
            values,
          )
        : undefined;
      const total = pool.query<UsageFigures>(`SELECT ${FIGURES} FROM svc_model_calls c WHERE ${where}`, values);
      const [rows, sum] = await Promise.all([grouped, total]);
      const listed = rows?.rows ?? [];
      return { rows: listed.slice(0, MAX_USAGE_ROWS), truncated: listed.length > MAX_USAGE_ROWS, total: sum.rows[0]! };
    },

    /**
     * A run's calls added up, in all and per phase (in the order the phases first called a model), with who started
     * the run; undefined when there is no such run.
     */
    async runTotals(
      runId: string,
    ): Promise<
      { createdBy: string | null; total: CallTotals; phases: (CallTotals & { phase: string })[] } | undefined
    > {
      const [total, phases] = await Promise.all([
        pool.query<CallTotals & { created_by: string | null }>(
          `SELECT r.created_by, ${TOTALS} FROM svc_runs r LEFT JOIN svc_model_calls c ON c.run_id = r.id
            WHERE r.id = $1 GROUP BY r.id`,
          [runId],
        ),
        pool.query<CallTotals & { phase: string }>(
          `SELECT c.node_id AS phase, ${TOTALS} FROM svc_model_calls c WHERE c.run_id = $1
            GROUP BY c.node_id ORDER BY min(c.created_at)`,
          [runId],
        ),
      ]);
      const row = total.rows[0];
      if (!row) return undefined;
      const { created_by: createdBy, ...figures } = row;
      return { createdBy, total: { ...figures, duration_ms: figures.duration_ms ?? 0 }, phases: phases.rows };
    },
  };
}

export type ModelCallsRepository = ReturnType<typeof modelCallsRepository>;
