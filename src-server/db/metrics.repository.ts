import type { RunStatus } from '../contracts/runs';
import type { Pool } from './pool';

/** What the metrics read of the whole cluster at each scrape: the same on every process. */
export interface ClusterFigures {
  /** Runs not finished, by agent and status: only agents with such runs appear. */
  runs: { agent: string; status: Extract<RunStatus, 'running' | 'waiting_approval'>; runs: number }[];
  /** Seconds the longest-waiting approval (a gate or a tool call that asks) has waited; null when none waits. */
  oldest_gate_s: number | null;
  /** Webhook deliveries waiting to be sent or tried again. */
  deliveries_pending: number;
  /** Seconds since the oldest pending delivery was queued; null when none is pending. */
  oldest_delivery_s: number | null;
}

/**
 * One statement, whose cost follows the runs in progress and the deliveries pending, never the history: each part
 * reads a partial index (svc_runs_running, svc_runs_gate_expiry, svc_webhook_deliveries_due). Counting finished runs
 * or sent deliveries would read the whole table at every scrape (docs/observability.md says what was measured).
 */
const CLUSTER_FIGURES = `
  SELECT coalesce((SELECT json_agg(live) FROM (
             SELECT agent, status, count(*)::integer AS runs FROM svc_runs WHERE status = 'running' GROUP BY agent, status
             UNION ALL
             SELECT agent, status, count(*)::integer FROM svc_runs WHERE status = 'waiting_approval'
              GROUP BY agent, status) live), '[]') AS runs,
         (SELECT extract(epoch FROM now() - min(gate_waiting_since))::float8
            FROM svc_runs WHERE status = 'waiting_approval') AS oldest_gate_s,
         (SELECT count(*)::integer FROM svc_webhook_deliveries WHERE status = 'pending') AS deliveries_pending,
         (SELECT extract(epoch FROM now() - min(created_at))::float8
            FROM svc_webhook_deliveries WHERE status = 'pending') AS oldest_delivery_s`;

export function metricsRepository(pool: Pool) {
  return {
    async clusterFigures(): Promise<ClusterFigures> {
      const { rows } = await pool.query<ClusterFigures>(CLUSTER_FIGURES);
      return rows[0]!;
    },
  };
}

export type MetricsRepository = ReturnType<typeof metricsRepository>;
