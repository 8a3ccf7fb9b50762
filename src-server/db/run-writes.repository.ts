import type { RunWriteStore, RunWrites } from '../storage/types';
import { insertModelCallsQuery } from './model-calls.repository';
import type { Pool } from './pool';
import { insertEventsQuery, RUN_EVENTS_CHANNEL } from './run-events.repository';
import { upsertNodeRowsQuery } from './run-nodes.repository';
import { prepared } from './prepared';

/**
 * The engine's RunWriteStore: what the runs of a process record as they go — events, node rows, model calls — in one
 * statement, so one round trip and one commit for what arrived together (a node's end is its node_exit event, its row
 * and its model call), rather than one of each. The statement announces each run's new last stored event on
 * RUN_EVENTS_CHANNEL, as its readers on other processes wait for.
 */
export function runWritesRepository(pool: Pool): RunWriteStore {
  return {
    async write({ events, nodes, calls }: RunWrites): Promise<void> {
      const params: unknown[] = [];
      const parts: string[] = [];
      if (events.length > 0) parts.push(insertEventsQuery(events, params));
      if (nodes.length > 0) parts.push(upsertNodeRowsQuery(nodes, params));
      if (calls.length > 0) parts.push(insertModelCallsQuery(calls, params));
      if (parts.length === 0) return;
      // Data-modifying WITH queries run once and to completion whether or not the final SELECT reads them.
      const announce =
        events.length > 0
          ? `SELECT pg_notify($${params.push(RUN_EVENTS_CHANNEL)}, run_id::text || ':' || max(seq)) FROM stored GROUP BY run_id`
          : 'SELECT 1';
      await pool.query(prepared(`WITH ${parts.join(',\n')}\n${announce}`), params);
    },
  };
}
