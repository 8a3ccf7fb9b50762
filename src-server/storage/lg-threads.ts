import type { PendingGate, RunStatus } from '../contracts/runs';
import type { ForkedFrom } from './types';

/**
 * What the LangGraph API reads of threads and runs (db/lg-threads.repository.ts writes and reads them): the rows the
 * service (services/lg-threads.service.ts) hands its door (http/langgraph/), declared here so that both use one
 * definition and the door imports nothing of db/.
 */

/** A thread as the LangGraph API lists it: a thread of an agent, or a draft that has had no run yet. */
export interface LgThreadRow {
  id: string;
  /** Null for a draft. */
  agent: string | null;
  /** What the thread is called: its first message unless a person renamed it; null for a draft. */
  name: string | null;
  project_id: string;
  metadata: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
  last_run_id: string | null;
  last_run_status: RunStatus | null;
  pending_gate: PendingGate | null;
  event_seq: number | null;
}

/** A run with what the LangGraph API shows of it: its message and the output of each phase, in the order they ran. */
export interface LgRunRow {
  id: string;
  thread_id: string;
  agent: string;
  status: RunStatus;
  message: string | null;
  error_detail: string | null;
  started_at: Date;
  finished_at: Date | null;
  event_seq: number;
  pending_gate: PendingGate | null;
  stream_mode: string[] | null;
  metadata: Record<string, unknown> | null;
  nodes: { node: string; output: string }[];
  /** Where a run on a branch started: its messages follow that run's (`follows_end`) or replace them. */
  forked_from: ForkedFrom | null;
}

/** Which threads a search finds, whatever their order and page. */
export interface LgThreadFilter {
  /** Containment on the thread's metadata (with `graph_id` its agent's name). */
  metadata: Record<string, unknown>;
  ids: string[] | null;
  status: 'idle' | 'busy' | 'interrupted' | 'error' | null;
}

export interface LgThreadQuery extends LgThreadFilter {
  /** Null: every project. */
  projectIds: string[] | null;
  limit: number;
  offset: number;
  sortBy: 'thread_id' | 'status' | 'created_at' | 'updated_at';
  sortOrder: 'asc' | 'desc';
}
