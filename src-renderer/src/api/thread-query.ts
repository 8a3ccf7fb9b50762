import type { RunStatus } from '@contracts/runs';

/** What `GET /threads` narrows its list by (docs/http-api.md); a field left out narrows nothing. */
export interface ThreadListFilter {
  /** Words of a run's message or final output, or of the thread's name: `"a phrase"`, `or`, `-word`. */
  q?: string;
  /** The thread's agent or command. */
  agent?: string;
  /** The status of the run the thread stands at. */
  status?: RunStatus;
  /** The user who made the thread. */
  started_by?: string;
  /** ISO 8601: last active at or after / before. */
  from?: string;
  to?: string;
}

/** The longest `q` the server takes. */
export const MAX_QUERY_LENGTH = 200;

/**
 * The query string of a page of `GET /threads` (without the `?`): the page's size, the previous page's cursor, the
 * project, and the filter, each field only when it says something.
 */
export function threadListQuery(
  limit: number,
  cursor?: string | null,
  projectId?: string | null,
  filter: ThreadListFilter = {},
): string {
  const params = new URLSearchParams({ limit: String(limit) });
  if (cursor) params.set('cursor', cursor);
  if (projectId) params.set('project_id', projectId);
  const q = filter.q?.trim().slice(0, MAX_QUERY_LENGTH).trim();
  if (q) params.set('q', q);
  const agent = filter.agent?.trim();
  if (agent) params.set('agent', agent);
  if (filter.status) params.set('status', filter.status);
  if (filter.started_by) params.set('started_by', filter.started_by);
  if (filter.from) params.set('from', filter.from);
  if (filter.to) params.set('to', filter.to);
  return params.toString();
}
