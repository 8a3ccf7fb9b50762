import { FINISHED_RUN_STATUSES, type RunStatus, type Thread } from '@contracts/runs';
import { defineStore } from 'pinia';
import { errorMessage } from '@contracts/errors';
import { computed, ref } from 'vue';
import type { ThreadListFilter } from '../api/thread-query';
import { threadsApi } from '../api/threads.api';
import { useSessionStore } from './session.store';
import { appendNew, isSearching, noSearch, searchFilter, type ThreadSearch } from './thread-search';

const PAGE = 50;
/** How soon the list is read again after the studio saw a run change: several changes in a row make one read. */
const SETTLE_MS = 150;
/**
 * While a listed run goes on away from the screen (resumed from the inbox, started elsewhere), the list is read this
 * often.
 */
export const ACTIVE_POLL_MS = 3000;
/** Otherwise, for what other people and processes change. */
const IDLE_POLL_MS = 15_000;

/** What the studio saw become of a run: from its stream, a decision's answer, a cancel's. */
export interface RunSeen {
  threadId: string;
  runId: string;
  status: RunStatus;
  /** The run's message, when it is a new run of the thread. */
  message?: string | null;
}

const active = (t: Thread) => t.last_run?.status === 'running' || t.last_run?.status === 'queued';

/**
 * Threads the caller may see, most recent first, a page at a time: the one list the studio shows threads and their
 * runs' status from. What the studio sees happen (a run's events, a decision, a cancel) changes a row at once, and the
 * list is read again just after; a poll picks up what happens elsewhere.
 *
 * A search (words, filters) lists its own threads beside it, from the server, a page at a time too: the list the
 * other parts of the studio read (the inbox, the approval nudge) stays whole while a person searches. The results are
 * read again whenever the list is, and change with what the studio sees as its rows do.
 */
export const useThreadsStore = defineStore('threads', () => {
  const threads = ref<Thread[]>([]);
  const nextCursor = ref<string | null>(null);
  /** Why the last reload failed; the list shown is then out of date. */
  const error = ref<string | null>(null);
  /** The project chosen in the switcher: only its threads are listed (all the caller may see without one). */
  const session = useSessionStore();
  /** Runs seen ending here: a read that raced the end (its status not stored yet) does not bring them back. */
  const ended = new Map<string, RunStatus>();
  const listeners = new Set<(seen: RunSeen) => void>();
  let generation = 0;

  /** The search as set above the list; the results answer `answered`, the one last read. */
  const search = ref<ThreadSearch>(noSearch());
  const searchActive = computed(() => isSearching(search.value));
  const results = ref<Thread[]>([]);
  const resultsCursor = ref<string | null>(null);
  const answered = ref<ThreadSearch | null>(null);
  /** A search is being read (the list is then busy). */
  const searching = ref(false);
  const searchError = ref<string | null>(null);
  /** The filter the results were read with: their further pages are read with it (its "since" moment included). */
  let resultsFilter: ThreadListFilter = {};
  let searchGeneration = 0;
  let settleTimer: ReturnType<typeof setTimeout> | undefined;
  let pollTimer: ReturnType<typeof setTimeout> | undefined;

  function withSeen(thread: Thread): Thread {
    const run = thread.last_run;
    const status = run && ended.get(run.id);
    if (!run || !status) return thread;
    if (FINISHED_RUN_STATUSES.includes(run.status)) ended.delete(run.id);
    return FINISHED_RUN_STATUSES.includes(run.status) ? thread : { ...thread, last_run: { ...run, status } };
  }

  /**
   * Reloads from the top, keeping as many threads as were shown. It never throws: a failure is kept in `error`
   * for the list to show with a Retry, as the list is reloaded from many places (start-up, after a run). Only the
   * latest read is kept: an earlier one answering late would show what was before.
   */
  async function load(): Promise<void> {
    const mine = ++generation;
    try {
      const page = await threadsApi.list(
        Math.max(PAGE, Math.min(threads.value.length, 200)),
        undefined,
        session.scope.projectId,
      );
      if (mine !== generation) return;
      threads.value = page.items.map(withSeen);
      nextCursor.value = page.next_cursor;
      error.value = null;
      // What changed the list may change what a search finds (a run ended, a thread renamed, another project).
      if (searchActive.value) void runSearch(results.value.length);
    } catch (e) {
      if (mine === generation) error.value = `Threads could not be loaded: ${errorMessage(e)}`;
    } finally {
      if (mine === generation) schedulePoll();
    }
  }

  /**
   * Reads the search from the top (keeping as many results as were shown, when `keep` says how many), or forgets the
   * results when nothing is searched. Only the latest read is kept; it never throws (a failure is kept in
   * `searchError`).
   */
  async function runSearch(keep = 0): Promise<void> {
    const mine = ++searchGeneration;
    const wanted = { ...search.value };
    if (!isSearching(wanted)) {
      results.value = [];
      resultsCursor.value = null;
      answered.value = null;
      searching.value = false;
      searchError.value = null;
      return;
    }
    const filter = searchFilter(wanted, session.me?.user.id ?? null, new Date());
    searching.value = true;
    try {
      const page = await threadsApi.list(
        Math.max(PAGE, Math.min(keep, 200)),
        undefined,
        session.scope.projectId,
        filter,
      );
      if (mine !== searchGeneration) return;
      results.value = page.items.map(withSeen);
      resultsCursor.value = page.next_cursor;
      resultsFilter = filter;
      answered.value = wanted;
      searchError.value = null;
    } catch (e) {
      if (mine === searchGeneration) searchError.value = `The search failed: ${errorMessage(e)}`;
    } finally {
      if (mine === searchGeneration) searching.value = false;
    }
  }

  /** The search's words and filters, changed: the results are read again. */
  function searchFor(next: ThreadSearch): Promise<void> {
    search.value = { ...next };
    return runSearch();
  }

  /** The next page of the results: a thread already shown is not shown twice. */
  async function loadMoreResults(): Promise<void> {
    if (!resultsCursor.value) return;
    const mine = searchGeneration;
    const page = await threadsApi.list(PAGE, resultsCursor.value, session.scope.projectId, resultsFilter);
    if (mine !== searchGeneration) return;
    results.value = appendNew(results.value, page.items.map(withSeen));
    resultsCursor.value = page.next_cursor;
  }

  function schedulePoll(): void {
    clearTimeout(pollTimer);
    const busy = threads.value.some(active) || results.value.some(active);
    pollTimer = setTimeout(() => void load(), busy ? ACTIVE_POLL_MS : IDLE_POLL_MS);
  }

  /**
   * A run changed as the studio saw it: its row says so at once (a new run moves its thread to the top), and the
   * list is read again to catch what the row cannot know (a thread new to the list, its name).
   */
  function track(seen: RunSeen): void {
    if (FINISHED_RUN_STATUSES.includes(seen.status)) ended.set(seen.runId, seen.status);
    const row = showSeen(threads.value, seen);
    showSeen(results.value, seen);
    for (const listener of listeners) listener(seen);
    clearTimeout(settleTimer);
    if (!row) void load();
    else settleTimer = setTimeout(() => void load(), SETTLE_MS);
  }

  /** A run change on its thread's row in `list`, when it has one (returned). */
  function showSeen(list: Thread[], seen: RunSeen): Thread | undefined {
    const index = list.findIndex((t) => t.id === seen.threadId);
    const row = list[index];
    if (!row) return undefined;
    const newRun = row.last_run?.id !== seen.runId;
    // As the server lists it: a run queued behind the one the thread stands at does not hide it (its gate).
    const standsAt = row.last_run?.status === 'running' || row.last_run?.status === 'waiting_approval';
    if (!(newRun && seen.status === 'queued' && standsAt)) row.last_run = { id: seen.runId, status: seen.status };
    if (newRun) {
      if (seen.message) row.last_message = seen.message;
      row.updated_at = new Date().toISOString();
      list.splice(index, 1);
      list.unshift(row);
    }
    return row;
  }

  /** Listens for every run change the studio sees (the inbox drops what no longer waits). */
  function onRunSeen(listener: (seen: RunSeen) => void): void {
    listeners.add(listener);
  }

  async function loadMore(): Promise<void> {
    if (!nextCursor.value) return;
    const page = await threadsApi.list(PAGE, nextCursor.value, session.scope.projectId);
    threads.value = appendNew(threads.value, page.items.map(withSeen));
    nextCursor.value = page.next_cursor;
  }

  async function remove(id: string): Promise<void> {
    await threadsApi.remove(id);
    results.value = results.value.filter((t) => t.id !== id);
    await load();
  }

  /** A person's name for the thread; the row shows it at once, and keeps the old one if the server refuses. */
  async function rename(id: string, name: string): Promise<void> {
    const row = threads.value.find((t) => t.id === id);
    const result = results.value.find((t) => t.id === id);
    const before = row?.name ?? result?.name ?? null;
    const show = (value: string | null) => {
      if (row) row.name = value;
      if (result) result.name = value;
    };
    show(name);
    try {
      const renamed = await threadsApi.rename(id, name);
      show(renamed.name);
      // A thread not listed yet (a rerun's, just started) comes with its name.
      if (!row) await load();
    } catch (e) {
      show(before);
      throw e;
    }
  }

  /** The agent a thread belongs to (its latest run's), for a link that names only the thread; null when it has none. */
  async function agentOf(id: string): Promise<string | null> {
    return (await threadsApi.runs(id))[0]?.agent ?? null;
  }

  return {
    threads,
    nextCursor,
    error,
    load,
    loadMore,
    remove,
    rename,
    track,
    onRunSeen,
    agentOf,
    search,
    searchActive,
    results,
    resultsCursor,
    answered,
    searching,
    searchError,
    searchFor,
    runSearch,
    loadMoreResults,
  };
});
