import type { AuditAction, AuditEvent } from '@contracts/audit';
import { errorMessage } from '@contracts/errors';
import { defineStore } from 'pinia';
import { computed, ref, watch } from 'vue';
import { auditApi, type AuditScope } from '../api/audit.api';
import { ApiError } from '../api/http';
import { useSessionStore } from './session.store';

/** The view stays open across a reload of the page, as the other views do. */
const OPEN_KEY = 'svc.audit-view-open';
const PAGE = 50;

/**
 * The Audit log view (docs/audit.md): who changed what and when in the project chosen in the header, or in its
 * organisation (its projects' changes included) when the person chooses that; filtered by one kind of change; newest
 * first, a page at a time. Read by the scope's administrators; anyone else is told so.
 */
export const useAuditStore = defineStore('audit', () => {
  const session = useSessionStore();
  const open = ref(sessionStorage.getItem(OPEN_KEY) === 'true');
  /** Whose changes: the chosen project's, or its organisation's. */
  const scope = ref<'project' | 'org'>('project');
  const action = ref<AuditAction | null>(null);
  const events = ref<AuditEvent[]>([]);
  const next = ref<string | null>(null);
  const loaded = ref(false);
  const loading = ref(false);
  const error = ref<string | null>(null);
  /** The caller may not read this scope's log (403): said in words, not as a failure. */
  const forbidden = ref(false);
  let asked = 0;

  /** The scope asked for: the project when one is chosen and wanted, else the organisation; none without either. */
  const query = computed<AuditScope | null>(() => {
    const { projectId, orgId } = session.scope;
    if (scope.value === 'project' && projectId) return { project_id: projectId };
    if (orgId) return { org_id: orgId };
    return null;
  });
  const scopeName = computed(() => {
    const q = query.value;
    if (!q) return null;
    if ('project_id' in q) {
      const p = session.projectChoices.find((c) => c.id === q.project_id);
      return `project ${p?.name ?? q.project_id}`;
    }
    const o = session.orgs.find((c) => c.id === q.org_id);
    return `organisation ${o?.name ?? q.org_id}`;
  });

  /** The first page again (`more`: the page after the last one shown). */
  async function load(more = false): Promise<void> {
    const q = query.value;
    const ask = ++asked;
    if (!q) {
      events.value = [];
      next.value = null;
      loaded.value = true;
      return;
    }
    loading.value = true;
    try {
      const page = await auditApi.list(q, { action: action.value, beforeId: more ? next.value : null, limit: PAGE });
      if (ask !== asked) return;
      events.value = more ? [...events.value, ...page.events] : page.events;
      next.value = page.next;
      error.value = null;
      forbidden.value = false;
    } catch (e) {
      if (ask !== asked) return;
      if (e instanceof ApiError && e.status === 403) {
        forbidden.value = true;
        events.value = [];
        next.value = null;
        error.value = null;
      } else error.value = `The audit log could not be loaded: ${errorMessage(e)}`;
    } finally {
      if (ask === asked) {
        loading.value = false;
        loaded.value = true;
      }
    }
  }

  function show(visible = true): void {
    open.value = visible;
    sessionStorage.setItem(OPEN_KEY, String(visible));
    if (visible) void load();
  }

  function choose(choice: { scope?: 'project' | 'org'; action?: AuditAction | null }): void {
    if (choice.scope) scope.value = choice.scope;
    if (choice.action !== undefined) action.value = choice.action;
    void load();
  }

  // Another project or organisation chosen in the header: its log.
  watch(
    () => [session.scope.orgId, session.scope.projectId],
    () => open.value && void load(),
  );

  return { open, scope, action, events, next, loaded, loading, error, forbidden, query, scopeName, load, show, choose };
});
