import { errorMessage } from '@contracts/errors';
import type { CreateSchedule, Schedule, ScheduleFire, UpdateSchedule } from '@contracts/schedules';
import { defineStore } from 'pinia';
import { ref, watch } from 'vue';
import { schedulesApi } from '../api/schedules.api';
import { useSessionStore } from './session.store';
import { useThreadsStore } from './threads.store';

/** The view stays open across a reload of the page, as the Models view does. */
const OPEN_KEY = 'svc.schedules-view-open';
/** How often the open view reads the list again: next times move on and fires happen without anyone asking. */
const REFRESH_MS = 10_000;

/**
 * The Schedules view: one project's schedules (the project chosen in the header, else the view's own choice), with
 * their next times and last fire; creating, changing, pausing, resuming, running now and deleting them; and the
 * history of one schedule's fires.
 */
export const useSchedulesStore = defineStore('schedules', () => {
  const session = useSessionStore();
  const threads = useThreadsStore();
  const open = ref(sessionStorage.getItem(OPEN_KEY) === 'true');
  const projectId = ref<string | null>(null);
  const items = ref<Schedule[]>([]);
  const loaded = ref(false);
  const error = ref<string | null>(null);
  /** What the last action did, said above the list (role="status"). */
  const notice = ref<{ ok: boolean; text: string } | null>(null);
  /** The schedule whose history is shown, and that history. */
  const historyOf = ref<string | null>(null);
  const fires = ref<ScheduleFire[]>([]);
  const firesError = ref<string | null>(null);
  let timer: ReturnType<typeof setInterval> | undefined;

  /** The header's project when one is chosen; otherwise the view keeps its own, the first it may see. */
  function settleProject(): void {
    const choices = session.projectChoices;
    if (session.scope.projectId) projectId.value = session.scope.projectId;
    else if (!projectId.value || !choices.some((c) => c.id === projectId.value)) {
      projectId.value = choices[0]?.id ?? null;
    }
  }

  async function load(): Promise<void> {
    settleProject();
    if (!projectId.value) {
      items.value = [];
      loaded.value = true;
      return;
    }
    try {
      items.value = await schedulesApi.list(projectId.value);
      error.value = null;
    } catch (e) {
      error.value = `The schedules could not be loaded: ${errorMessage(e)}`;
    }
    loaded.value = true;
    if (historyOf.value) await loadFires(historyOf.value);
  }

  async function loadFires(id: string): Promise<void> {
    historyOf.value = id;
    try {
      fires.value = await schedulesApi.fires(id);
      firesError.value = null;
    } catch (e) {
      firesError.value = `The history could not be loaded: ${errorMessage(e)}`;
    }
  }

  function show(visible = true): void {
    open.value = visible;
    sessionStorage.setItem(OPEN_KEY, String(visible));
    clearInterval(timer);
    if (!visible) return;
    void load();
    timer = setInterval(() => void load(), REFRESH_MS);
  }

  function chooseProject(id: string): void {
    projectId.value = id;
    historyOf.value = null;
    fires.value = [];
    loaded.value = false;
    void load();
  }

  /** Runs an action, says how it went, and reloads; false when it failed (the form keeps what was typed). */
  async function act(action: () => Promise<unknown>, done: string): Promise<boolean> {
    try {
      await action();
      notice.value = { ok: true, text: done };
      return true;
    } catch (e) {
      notice.value = { ok: false, text: errorMessage(e) };
      return false;
    } finally {
      await load();
    }
  }

  watch(
    () => session.scope.projectId,
    () => open.value && chooseProject(session.scope.projectId ?? projectId.value ?? ''),
  );

  return {
    open,
    projectId,
    items,
    loaded,
    error,
    notice,
    historyOf,
    fires,
    firesError,
    load,
    loadFires,
    show,
    chooseProject,
    closeHistory: () => {
      historyOf.value = null;
      fires.value = [];
    },
    create: (body: CreateSchedule) =>
      act(() => schedulesApi.create(projectId.value!, body), `Schedule of ${body.agent} created.`),
    update: (schedule: Schedule, body: UpdateSchedule) =>
      act(() => schedulesApi.update(schedule.id, body), `Schedule of ${schedule.agent} saved.`),
    pause: (schedule: Schedule) => act(() => schedulesApi.pause(schedule.id), `Schedule of ${schedule.agent} paused.`),
    resume: (schedule: Schedule) =>
      act(() => schedulesApi.resume(schedule.id), `Schedule of ${schedule.agent} resumed.`),
    remove: (schedule: Schedule) =>
      act(async () => {
        await schedulesApi.remove(schedule.id);
        if (historyOf.value === schedule.id) historyOf.value = null;
      }, `Schedule of ${schedule.agent} deleted.`),
    /** A run now; what the fire did (started, or refused and why) is the notice. */
    async runNow(schedule: Schedule): Promise<void> {
      try {
        const fire = await schedulesApi.runNow(schedule.id);
        notice.value =
          fire.outcome === 'started'
            ? { ok: true, text: `Run of ${schedule.agent} started.` }
            : fire.outcome === 'paused'
              ? { ok: false, text: fire.reason ?? 'Paused.' }
              : { ok: false, text: `Run of ${schedule.agent} ${fire.outcome}: ${fire.reason ?? ''}` };
      } catch (e) {
        notice.value = { ok: false, text: errorMessage(e) };
      }
      await load();
      if (historyOf.value === schedule.id) await loadFires(schedule.id);
      // Its run's thread is new to the list beside the view.
      void threads.load();
    },
  };
});
