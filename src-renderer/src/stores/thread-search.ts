import type { RunStatus, Thread } from '@contracts/runs';
import type { ThreadListFilter } from '../api/thread-query';

/** How far back the threads' last activity reaches. */
export type ActiveSince = 'any' | 'today' | '7d' | '30d';

export const ACTIVE_SINCE_LABELS: Record<ActiveSince, string> = {
  any: 'Any time',
  today: 'Today',
  '7d': 'Last 7 days',
  '30d': 'Last 30 days',
};

/** The search above the thread list, as the person set it: the words and the filters. */
export interface ThreadSearch {
  /** As a search engine takes them: `"a phrase"`, `or`, `-word`; the server matches them. */
  text: string;
  /** An agent or command; '' for any. */
  agent: string;
  /** The status of the run the thread stands at; '' for any. */
  status: RunStatus | '';
  /** Only the threads the signed-in person started. */
  mine: boolean;
  since: ActiveSince;
}

export const noSearch = (): ThreadSearch => ({ text: '', agent: '', status: '', mine: false, since: 'any' });

/** How many filters (the words aside) narrow the list, for the Filters button to say. */
export function filterCount(search: ThreadSearch): number {
  return [search.agent !== '', search.status !== '', search.mine, search.since !== 'any'].filter(Boolean).length;
}

/** Whether the search narrows the list at all: words, or a filter. */
export const isSearching = (search: ThreadSearch): boolean => search.text.trim() !== '' || filterCount(search) > 0;

const DAY_MS = 24 * 60 * 60 * 1000;

/** The moment "last active since" starts at: the local day's start for Today; null for any time. */
export function activeSinceMoment(since: ActiveSince, now: Date): Date | null {
  if (since === 'today') return new Date(now.getFullYear(), now.getMonth(), now.getDate());
  if (since === '7d') return new Date(now.getTime() - 7 * DAY_MS);
  if (since === '30d') return new Date(now.getTime() - 30 * DAY_MS);
  return null;
}

/**
 * The search as `GET /threads` takes it. "Started by me" needs to know who that is: without a user (authentication
 * off), it narrows nothing. The moment of "since" is taken at `now`, once for all the pages of one listing.
 */
export function searchFilter(search: ThreadSearch, userId: string | null, now: Date): ThreadListFilter {
  const filter: ThreadListFilter = {};
  const text = search.text.trim();
  if (text) filter.q = text;
  if (search.agent) filter.agent = search.agent;
  if (search.status) filter.status = search.status;
  if (search.mine && userId) filter.started_by = userId;
  const from = activeSinceMoment(search.since, now);
  if (from) filter.from = from.toISOString();
  return filter;
}

/**
 * What the list says of a search's answer, for everyone and for a screen reader (a polite status): how many threads
 * match (`more`: a further page could bring more), or that none do.
 */
export function matchSummary(count: number, more: boolean, search: ThreadSearch): string {
  if (count === 0) {
    const text = search.text.trim();
    const filtered = filterCount(search) > 0;
    if (!text) return 'No threads match these filters.';
    return `No threads match “${text}”${filtered ? ' with these filters' : ''}.`;
  }
  if (more) return `${count}+ threads match`;
  return count === 1 ? '1 thread matches' : `${count} threads match`;
}

/** A further page added to a list: a thread the list already has (the server may list one twice) comes once. */
export function appendNew(list: Thread[], page: Thread[]): Thread[] {
  const seen = new Set(list.map((t) => t.id));
  const added: Thread[] = [];
  for (const thread of page) {
    if (seen.has(thread.id)) continue;
    seen.add(thread.id);
    added.push(thread);
  }
  return [...list, ...added];
}
