import { FINISHED_RUN_STATUSES, type RunStatus, type Thread } from '@contracts/runs';
import { defineStore } from 'pinia';
import { errorMessage } from '@contracts/errors';
import { ref } from 'vue';
import { threadsApi } from '../api/threads.api';
import { useSessionStore } from './session.store';

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
    } catch (e) {
      if (mine === generation) error.value = `Threads could not be loaded: ${errorMessage(e)}`;
    } finally {
      if (mine === generation) schedulePoll();
    }
  }

  function schedulePoll(): void {
    clearTimeout(pollTimer);
    pollTimer = setTimeout(() => void load(), threads.value.some(active) ? ACTIVE_POLL_MS : IDLE_POLL_MS);
  }

  /**
   * A run changed as the studio saw it: its row says so at once (a new run moves its thread to the top), and the
   * list is read again to catch what the row cannot know (a thread new to the list, its name).
   */
  function track(seen: RunSeen): void {
    if (FINISHED_RUN_STATUSES.includes(seen.status)) ended.set(seen.runId, seen.status);
    const index = threads.value.findIndex((t) => t.id === seen.threadId);
    const row = threads.value[index];
    if (row) {
      const newRun = row.last_run?.id !== seen.runId;
      // As the server lists it: a run queued behind the one the thread stands at does not hide it (its gate).
      const standsAt = row.last_run?.status === 'running' || row.last_run?.status === 'waiting_approval';
      if (!(newRun && seen.status === 'queued' && standsAt)) row.last_run = { id: seen.runId, status: seen.status };
      if (newRun) {
        if (seen.message) row.last_message = seen.message;
        row.updated_at = new Date().toISOString();
        threads.value.splice(index, 1);
        threads.value.unshift(row);
      }
    }
    for (const listener of listeners) listener(seen);
    clearTimeout(settleTimer);
    if (!row) void load();
    else settleTimer = setTimeout(() => void load(), SETTLE_MS);
  }

  /** Listens for every run change the studio sees (the inbox drops what no longer waits). */
  function onRunSeen(listener: (seen: RunSeen) => void): void {
    listeners.add(listener);
  }

  async function loadMore(): Promise<void> {
    if (!nextCursor.value) return;
    const page = await threadsApi.list(PAGE, nextCursor.value, session.scope.projectId);
    const seen = new Set(threads.value.map((t) => t.id));
    threads.value.push(...page.items.filter((t) => !seen.has(t.id)).map(withSeen));
    nextCursor.value = page.next_cursor;
  }

  async function remove(id: string): Promise<void> {
    await threadsApi.remove(id);
    await load();
  }

  /** A person's name for the thread; the row shows it at once, and keeps the old one if the server refuses. */
  async function rename(id: string, name: string): Promise<void> {
    const row = threads.value.find((t) => t.id === id);
    const before = row?.name ?? null;
    if (row) row.name = name;
    try {
      const renamed = await threadsApi.rename(id, name);
      if (row) row.name = renamed.name;
      // A thread not listed yet (a rerun's, just started) comes with its name.
      else await load();
    } catch (e) {
      if (row) row.name = before;
      throw e;
    }
  }

  /** The agent a thread belongs to (its latest run's), for a link that names only the thread; null when it has none. */
  async function agentOf(id: string): Promise<string | null> {
    return (await threadsApi.runs(id))[0]?.agent ?? null;
  }

  return { threads, nextCursor, error, load, loadMore, remove, rename, track, onRunSeen, agentOf };
});
