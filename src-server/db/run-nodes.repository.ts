import type { NodeStatus } from '../contracts/runs';
import type { NodeStore, NodeWrite } from '../storage/types';
import type { Pool } from './pool';
import { storable, storableJson } from './text';

/** Seconds since `at` (a `performance.now()` of this process): how long before the statement it happened. */
const agoS = (at: number | null) => (at === null ? null : Math.max(0, performance.now() - at) / 1000);

/**
 * Node rows (svc_run_nodes): the engine's NodeStore. A batch of rows is one statement; each row is written whole under
 * its run and key (`<node>#<visit>`), so a batch tried again, or a row written again by another process, ends as the
 * last write says. Times are the database's clock less how long ago they happened in the process that wrote them,
 * so rows written by different processes, and by the database itself (a cancel), are on one clock.
 */
export function runNodesRepository(pool: Pool) {
  return {
    async write(rows: readonly NodeWrite[]): Promise<void> {
      if (rows.length === 0) return;
      await pool.query(
        `INSERT INTO svc_run_nodes (run_id, key, node_id, status, output, entered_at, exited_at, queue_wait_ms,
                                    prompt_tokens, output_tokens, warnings, thinking)
         SELECT w.run_id, w.key, w.node, w.status, w.output,
                extract(epoch FROM clock_timestamp()) - w.entered_ago,
                extract(epoch FROM clock_timestamp()) - w.exited_ago,
                w.queue_wait_ms, w.prompt_tokens, w.output_tokens, w.warnings, w.thinking
           FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::float8[], $7::float8[],
                       $8::float8[], $9::integer[], $10::integer[], $11::jsonb[], $12::text[])
                AS w(run_id, key, node, status, output, entered_ago, exited_ago, queue_wait_ms, prompt_tokens,
                     output_tokens, warnings, thinking)
         ON CONFLICT (run_id, key) DO UPDATE
            SET status = excluded.status, output = excluded.output, exited_at = excluded.exited_at,
                queue_wait_ms = excluded.queue_wait_ms, prompt_tokens = excluded.prompt_tokens,
                output_tokens = excluded.output_tokens, warnings = excluded.warnings, thinking = excluded.thinking`,
        [
          rows.map((r) => r.runId),
          rows.map((r) => r.key),
          rows.map((r) => r.node),
          rows.map((r) => r.status),
          rows.map((r) => storable(r.output)),
          rows.map((r) => agoS(r.enteredAt)),
          rows.map((r) => agoS(r.exitedAt)),
          rows.map((r) => r.queueWaitMs),
          rows.map((r) => r.promptTokens),
          rows.map((r) => r.outputTokens),
          rows.map((r) => storableJson(r.warnings)),
          rows.map((r) => storable(r.thinking)),
        ],
      );
    },

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
