import { computed, watchEffect } from 'vue';
import { useCatalogStore } from '../stores/catalog.store';
import { useRunsStore, type GateReached } from '../stores/runs.store';
import { useThreadsStore } from '../stores/threads.store';

/** The page's own title, marked with the number of approvals waiting. */
export const BASE_TITLE = 'Agent workflow studio';

/** Whether a person looking at the screen would miss the studio's news: another tab, window or app has focus. */
export function studioInBackground(): boolean {
  return document.visibilityState === 'hidden' || !document.hasFocus();
}

/**
 * Asks for the browser's permission to notify, once, from a person's action (browsers refuse a request made
 * without one). The desktop app needs none.
 */
export function askNotificationPermission(): void {
  if (window.desktop || typeof Notification === 'undefined' || Notification.permission !== 'default') return;
  void Notification.requestPermission().catch(() => undefined);
}

/** The notification's text: which run stopped, where, and what it asks. */
export function notificationText(gate: GateReached): { title: string; body: string } {
  return {
    title: 'Approval waiting',
    body: `${gate.agent ?? 'A run'} stopped at ${gate.node}: ${gate.question}`,
  };
}

/**
 * Tells a person who is elsewhere that a run waits for their approval: a system notification (Electron's in the
 * desktop app, the browser's otherwise) when the studio is not the focused window, and the number of approvals
 * waiting in the page title. Clicking the notification brings the studio forward on that thread's approval card.
 */
export function useApprovalNudge(): void {
  const runs = useRunsStore();
  const threads = useThreadsStore();
  const catalog = useCatalogStore();

  /** Threads whose latest run waits at a gate: the run on screen as its stream says, the others as last listed. */
  const waiting = computed(() => {
    const ids = new Set(
      threads.threads.filter((t) => t.last_run?.status === 'waiting_approval').map((thread) => thread.id),
    );
    const onScreen = runs.view.threadId;
    if (onScreen) {
      if (runs.view.status === 'waiting_approval') ids.add(onScreen);
      else if (runs.view.runId) ids.delete(onScreen);
    }
    return ids.size;
  });
  watchEffect(() => {
    document.title = waiting.value > 0 ? `(${waiting.value}) ${BASE_TITLE}` : BASE_TITLE;
  });

  async function open(gate: GateReached): Promise<void> {
    window.focus();
    if (runs.view.runId !== gate.runId) {
      if (gate.agent && catalog.selected !== gate.agent) await catalog.select(gate.agent);
      await runs.openThread(gate.threadId);
    }
    runs.showApproval();
  }

  runs.onGateWaiting((gate) => {
    if (!studioInBackground()) return;
    const text = notificationText(gate);
    if (window.desktop) {
      void window.desktop
        .showNotification(text)
        .then((outcome) => (outcome === 'clicked' ? open(gate) : undefined))
        .catch(() => undefined);
      return;
    }
    if (typeof Notification === 'undefined' || Notification.permission !== 'granted') return;
    const notification = new Notification(text.title, { body: text.body, tag: `gate:${gate.runId}:${gate.node}` });
    notification.onclick = () => {
      notification.close();
      void open(gate);
    };
  });
}
