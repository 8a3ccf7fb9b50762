import type { NodeStatus } from '../contracts/runs';
import type { NodeStore, NodeWrite } from '../storage/types';
import type { Pool } from './pool';
import { storable, storableJson } from './text';

/** Seconds since `at` (a `performance.now()` of this process): how long before the statement it happened. */
const agoS = (at: number | null) => (at === null ? null : Math.max(0, performance.now() - at) / 1000);

/**
 * The part of a run-writes statement (run-writes.repository.ts) that writes node rows (svc_run_nodes): each row whole
 * under its run and key (`<node>#<visit>`), so a batch tried again, or a row written again by another process, ends as
 * the last write says. Times are the database's clock less how long ago they happened in the process that wrote them,
 * so rows written by different processes, and by the database itself (a cancel), are on one clock. A row written again
 * keeps its entry time and takes its exit and first token as offsets from it, measured in the process: two statements
 * do not run the same time after they were built (a busy pool, a busy machine), and a short phase's exit could
 * otherwise land before its entry. Its parameters are appended to `params`.
 */
export function upsertNodeRowsQuery(rows: readonly NodeWrite[], params: unknown[]): string {
  const $ = (values: unknown[]) => `$${params.push(values)}`;
  return `nodes AS (
    INSERT INTO svc_run_nodes (run_id, key, node_id, status, output, entered_at, exited_at, queue_wait_ms,
                               prompt_tokens, output_tokens, warnings, thinking, first_token_at)
    SELECT w.run_id, w.key, w.node, w.status, w.output,
           extract(epoch FROM clock_timestamp()) - w.entered_ago,
           extract(epoch FROM clock_timestamp()) - w.exited_ago,
           w.queue_wait_ms, w.prompt_tokens, w.output_tokens, w.warnings, w.thinking,
           extract(epoch FROM clock_timestamp()) - w.first_token_ago
      FROM unnest(${$(rows.map((r) => r.runId))}::uuid[], ${$(rows.map((r) => r.key))}::text[],
                  ${$(rows.map((r) => r.node))}::text[], ${$(rows.map((r) => r.status))}::text[],
                  ${$(rows.map((r) => storable(r.output)))}::text[], ${$(rows.map((r) => agoS(r.enteredAt)))}::float8[],
                  ${$(rows.map((r) => agoS(r.exitedAt)))}::float8[], ${$(rows.map((r) => r.queueWaitMs))}::float8[],
                  ${$(rows.map((r) => r.promptTokens))}::integer[], ${$(rows.map((r) => r.outputTokens))}::integer[],
                  ${$(rows.map((r) => storableJson(r.warnings)))}::jsonb[], ${$(rows.map((r) => storable(r.thinking)))}::text[],
                  ${$(rows.map((r) => agoS(r.firstTokenAt)))}::float8[])
           AS w(run_id, key, node, status, output, entered_ago, exited_ago, queue_wait_ms, prompt_tokens,
                output_tokens, warnings, thinking, first_token_ago)
    ON CONFLICT (run_id, key) DO UPDATE
       SET status = excluded.status, output = excluded.output,
           exited_at = svc_run_nodes.entered_at + (excluded.exited_at - excluded.entered_at),
           queue_wait_ms = excluded.queue_wait_ms, prompt_tokens = excluded.prompt_tokens,
           output_tokens = excluded.output_tokens, warnings = excluded.warnings, thinking = excluded.thinking,
           first_token_at = COALESCE(svc_run_nodes.first_token_at,
                                     svc_run_nodes.entered_at + (excluded.first_token_at - excluded.entered_at))
  )`;
}

/** Node rows (svc_run_nodes): the engine's NodeStore, beside the writes of run-writes.repository.ts. */
export function runNodesRepository(pool: Pool) {
  return {
    async dropRunning(runId: string): Promise<string[]> {
      const { rows } = await pool.query<{ node_id: string }>(
        `DELETE FROM svc_run_nodes WHERE run_id = $1 AND exited_at IS NULL AND status = 'running' RETURNING node_id`,
        [runId],
      );
      return rows.map((r) => r.node_id);
    },

    async closeOpen(runId: string, status: NodeStatus): Promise<void> {
      await pool.query(
        `UPDATE svc_run_nodes SET status = $2, exited_at = extract(epoch FROM now())
          WHERE run_id = $1 AND exited_at IS NULL`,
        [runId, status],
      );
    },
  } satisfies NodeStore;
}

export type RunNodesRepository = ReturnType<typeof runNodesRepository>;
