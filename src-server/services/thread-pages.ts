import type { ThreadPage } from '../contracts/runs';
import type { ListedThread, ThreadFilter, ThreadKey, ThreadsRepository } from '../db/threads.repository';
import { encodeCursor, type ThreadCursor } from './thread-cursor';

/**
 * The threads updated since a listing began are read from a second before it: a run that started just before the
 * first page but committed just after it dates its thread from its transaction's start. A thread updated in that
 * second may come twice.
 */
const SINCE_MARGIN_MS = 1000;

/**
 * One page of GET /threads (see ThreadCursor): the threads updated until the listing began, most recent first, then
 * those updated since, least recently updated first. Every thread that existed when the listing began is on some
 * page at least once. A first page that holds every thread has no cursor: nothing could have moved yet.
 */
export async function listThreads(
  threads: ThreadsRepository,
  projects: string[] | null,
  limit: number,
  cursor?: ThreadCursor,
  drafts = false,
  filter: ThreadFilter = {},
): Promise<ThreadPage> {
  const newer = async (since: string, after: ThreadKey | null, room: number) => {
    const from = new Date(Date.parse(since) - SINCE_MARGIN_MS).toISOString();
    return { since, rows: await threads.updatedAfter(projects, room + 1, from, after, drafts, filter) };
  };
  /** The first `room` rows, and a cursor after the last one shown when there are more. */
  const page = (rows: ListedThread[], room: number, next: (after: ThreadKey | null) => ThreadCursor) => ({
    shown: rows.slice(0, room),
    next: rows.length > room ? encodeCursor(next(rows[room - 1]?.key ?? null)) : null,
  });

  if (cursor?.phase === 'newer') {
    const { rows } = await newer(cursor.since, cursor.after, limit);
    const { shown, next } = page(rows, limit, (after) => ({ phase: 'newer', since: cursor.since, after }));
    return { items: shown.map((row) => row.thread), next_cursor: next };
  }
  const older = await threads.older(projects, limit + 1, cursor?.since ?? null, cursor?.after ?? null, drafts, filter);
  const since = cursor?.since ?? older[0]?.listedAt;
  if (older.length > limit || !cursor || !since) {
    const { shown, next } = page(older, limit, (after) => ({ phase: 'older', since: since!, after }));
    return { items: shown.map((row) => row.thread), next_cursor: next };
  }
  // The older threads end on this page: the rest of it goes on with those updated since the listing began.
  const room = limit - older.length;
  const { rows } = await newer(since, null, room);
  const { shown, next } = page(rows, room, (after) => ({ phase: 'newer', since, after }));
  const seen = new Set(older.map((row) => row.thread.id));
  return {
    items: [...older, ...shown.filter((row) => !seen.has(row.thread.id))].map((row) => row.thread),
    next_cursor: next,
  };
}
