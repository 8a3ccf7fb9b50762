import type { Budget, SetBudget } from '@contracts/budgets';
import { errorMessage } from '@contracts/errors';
import { defineStore } from 'pinia';
import { computed, ref } from 'vue';
import { budgetsApi } from '../api/budgets.api';
import { ApiError } from '../api/http';
import { useSessionStore } from './session.store';

/** The budgets of one scope, with its name, as far as the caller may read them. */
export interface ScopeBudgets {
  type: 'project' | 'org';
  id: string;
  name: string;
  budgets: Budget[];
}

/** A scope the caller may not read the budgets of (403), or no longer sees (404): nothing is shown of it. */
const unreadable = (e: unknown) => e instanceof ApiError && (e.status === 403 || e.status === 404);

/**
 * The budgets of the project chosen in the header and of its organisation (docs/operations.md#budgets), with what
 * their current periods spent: for the Usage view's bars and the banner at the top of the studio. Only the scope's
 * owners and admins read them; for anyone else the lists stay null and nothing is shown.
 */
export const useBudgetsStore = defineStore('budgets', () => {
  const session = useSessionStore();
  const project = ref<ScopeBudgets | null>(null);
  const org = ref<ScopeBudgets | null>(null);
  const error = ref<string | null>(null);
  const loaded = ref(false);
  /** Answers to an earlier load that arrive after a later one's are dropped. */
  let asked = 0;

  /** The chosen project, when the caller owns it (null: an instance administrator, who may do anything). */
  const readableProject = computed(() => {
    const chosen = session.projectChoices.find((p) => p.id === session.scope.projectId);
    return chosen && ['admin', 'owner', null].includes(chosen.role) ? chosen : null;
  });
  /** The chosen organisation, when the caller owns or administers it. */
  const readableOrg = computed(() => {
    const chosen = session.orgs.find((o) => o.id === session.scope.orgId);
    return chosen && (chosen.role === 'admin' || chosen.role === 'owner') ? chosen : null;
  });

  async function read(type: 'project' | 'org', scope: { id: string; name: string } | null) {
    if (!scope) return null;
    try {
      const { budgets } = await budgetsApi.list(type, scope.id);
      // An organisation's list carries its projects' budgets too: here, only its own.
      return { type, id: scope.id, name: scope.name, budgets: budgets.filter((b) => b.scope.type === type) };
    } catch (e) {
      if (unreadable(e)) return null;
      throw e;
    }
  }

  async function load(): Promise<void> {
    const ask = ++asked;
    try {
      const [p, o] = await Promise.all([read('project', readableProject.value), read('org', readableOrg.value)]);
      if (ask !== asked) return;
      project.value = p;
      org.value = o;
      error.value = null;
    } catch (e) {
      if (ask === asked) error.value = `The budgets could not be loaded: ${errorMessage(e)}`;
    } finally {
      if (ask === asked) loaded.value = true;
    }
  }

  /** Sets the chosen project's budget of a period; the lists are read again. Throws what the server refused. */
  async function setProjectBudget(body: SetBudget): Promise<Budget> {
    const chosen = session.scope.projectId;
    if (!chosen) throw new Error('Choose a project first');
    const budget = await budgetsApi.set('project', chosen, body);
    await load();
    return budget;
  }

  async function remove(id: string): Promise<void> {
    await budgetsApi.remove(id);
    await load();
  }

  /**
   * The budgets that limit the caller's runs in the chosen project, at their warning level or past it: the project's
   * and its organisation's, everyone's or the caller's own. Spent ones first.
   */
  const alerts = computed(() => {
    const me = session.me?.user.id;
    return [project.value, org.value]
      .flatMap((scope) => (scope ? scope.budgets.map((budget) => ({ budget, scopeName: scope.name })) : []))
      .filter(({ budget }) => budget.status !== 'ok' && (budget.user_id === null || budget.user_id === me))
      .sort((a, b) => Number(b.budget.status === 'exceeded') - Number(a.budget.status === 'exceeded'));
  });

  return { project, org, error, loaded, readableProject, alerts, load, setProjectBudget, remove };
});
