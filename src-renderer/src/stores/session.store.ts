import type { Me } from '@contracts/auth';
import type { Scope } from '@contracts/tenancy';
import { defineStore } from 'pinia';
import { computed, ref, watch } from 'vue';
import { errorMessage } from '@contracts/errors';
import { authApi } from '../api/auth.api';
import { ApiError, getToken, onUnauthorized, setToken } from '../api/http';
import { tenancyApi } from '../api/tenancy.api';
import {
  decideLinkToken,
  describeIdentity,
  readHandoff,
  readLinkToken,
  signsSomeoneIn,
  type Identity,
  type LinkSource,
} from './link-token';
import { endHandoff } from './sign-in-handoff';

/** The organisation and project chosen in the switcher; only the studio reads it. */
const SCOPE_STORAGE_KEY = 'svc.scope';

interface ChosenScope {
  orgId: string | null;
  projectId: string | null;
}

function readScope(): ChosenScope {
  try {
    const saved = JSON.parse(localStorage.getItem(SCOPE_STORAGE_KEY) ?? '{}') as Partial<ChosenScope>;
    return { orgId: saved.orgId ?? null, projectId: saved.projectId ?? null };
  } catch {
    return { orgId: null, projectId: null };
  }
}

/** A studio link whose token the studio did not ask for: both identities, and the user's answer. */
export interface LinkPrompt {
  /** Whether the stored token signs someone in: the link would switch identities rather than sign in. */
  signedIn: boolean;
  current: string;
  /** null when the server refused the link's token: the user is only told that nothing changed. */
  next: string | null;
  answer(switchIdentity: boolean): void;
}

function isStatus(error: unknown, status: number): boolean {
  return error instanceof ApiError && error.status === status;
}

/** What the studio says when a part of the identity fails to load; null for a refused token (sign-in takes over). */
function failure(what: string, error: unknown): string | null {
  return isStatus(error, 401) ? null : `${what} could not be loaded: ${errorMessage(error)}`;
}

async function identityOf(token: string | null): Promise<Identity> {
  if (!token) return { state: 'none' };
  try {
    return { state: 'known', me: await authApi.meAs(token) };
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return { state: 'rejected' };
    return { state: 'unknown', reason: errorMessage(error) };
  }
}

/**
 * Where a link's token comes from: the sign-in this tab started, or, in the desktop app's window, the per-launch token
 * the app's main process started the server with (it opens the window on `/ui#token=…`); anything else is a link.
 */
async function sourceOf(link: string, handoff: string | null): Promise<LinkSource> {
  if (endHandoff(handoff)) return 'own-sign-in';
  if (!window.desktop) return 'other';
  try {
    return (await window.desktop.appInfo()).apiToken === link ? 'desktop-launch' : 'other';
  } catch {
    return 'other';
  }
}

/**
 * Who the studio signs in as, and in which organisation and project it works. A token in the URL
 * fragment (`#token=…`, from the start-up link or an OIDC login) is removed from the address bar and
 * stored in local storage: at once when the studio asked for it itself, after the user's consent otherwise
 * (link-token.ts).
 */
/** How long the switcher's lists count as fresh: reaching for it again within this reads nothing. */
const SCOPES_FRESH_MS = 5000;

export const useSessionStore = defineStore('session', () => {
  const token = ref<string | null>(getToken());
  const needsSignIn = ref(false);
  const linkPrompt = ref<LinkPrompt | null>(null);
  const me = ref<Me | null>(null);
  const orgs = ref<Scope[]>([]);
  const teams = ref<Scope[]>([]);
  const projects = ref<Scope[]>([]);
  const scope = ref<ChosenScope>(readScope());
  /** Why `/auth/me` or the tenancy lists failed; a refused token (401) goes to sign-in instead. */
  const identityError = ref<string | null>(null);
  const scopesError = ref<string | null>(null);
  watch(scope, (value) => localStorage.setItem(SCOPE_STORAGE_KEY, JSON.stringify(value)), { deep: true });

  /** Projects of the chosen organisation (through their teams), with the team each belongs to. */
  const projectChoices = computed(() => {
    const teamsInOrg = new Map(teams.value.filter((t) => t.parent_id === scope.value.orgId).map((t) => [t.id, t.name]));
    return projects.value
      .filter((p) => p.parent_id && teamsInOrg.has(p.parent_id))
      .map((p) => ({ id: p.id, name: p.name, team: teamsInOrg.get(p.parent_id!)!, role: p.role }));
  });

  /**
   * The teams of the chosen organisation this person may make a project in: those where her role is admin (inherited
   * from the organisation, or the instance administrator's everywhere), as the server checks it.
   */
  const projectTeams = computed(() =>
    teams.value.filter((t) => t.parent_id === scope.value.orgId && t.role === 'admin'),
  );

  /** Makes a project in one of those teams; it is listed at once and becomes the project chosen. */
  async function createProject(teamId: string, name: string): Promise<Scope> {
    const project = await tenancyApi.createProject(teamId, name);
    projects.value = [...projects.value.filter((p) => p.id !== project.id), project];
    selectProject(project.id);
    return project;
  }

  /** Whether a thread of this project belongs to the chosen scope (threads from before tenancy always do). */
  function inScope(projectId: string | null): boolean {
    if (scope.value.projectId) return projectId === scope.value.projectId;
    if (!scope.value.orgId || projectId === null) return true;
    return projectChoices.value.some((c) => c.id === projectId);
  }

  /** Asks the user, and resolves with the answer once they give it; a newer link's question cancels an older one. */
  function ask(current: Identity, next: string | null): Promise<boolean> {
    linkPrompt.value?.answer(false);
    return new Promise((resolve) => {
      linkPrompt.value = {
        signedIn: signsSomeoneIn(current),
        current: describeIdentity(current),
        next,
        answer(switchIdentity) {
          linkPrompt.value = null;
          resolve(switchIdentity);
        },
      };
    });
  }

  /**
   * Takes the token of a studio link (`#token=…`) and resolves once settled: at once when it ends this tab's own
   * sign-in or opens the desktop app's window; otherwise after the user's answer, whatever is stored (nothing, a token
   * that no longer works, another one). Resolves true when the stored token changed.
   */
  async function takeTokenFromFragment(): Promise<boolean> {
    const hash = window.location.hash;
    const link = readLinkToken(hash);
    if (link === null) return false;
    // Off the address bar before anything else: the token must not stay in history or be copied on.
    history.replaceState(null, '', window.location.pathname + window.location.search);
    const stored = getToken();
    if (stored === link) return false;
    const [source, current, next] = await Promise.all([
      sourceOf(link, readHandoff(hash)),
      identityOf(stored),
      identityOf(link),
    ]);
    const decision = decideLinkToken(source, next);
    if (decision === 'keep') {
      await ask(current, null);
      return false;
    }
    if (decision === 'ask' && !(await ask(current, describeIdentity(next)))) return false;
    setToken(link);
    token.value = getToken();
    return true;
  }

  /** The user and the scopes they may see; a server without tenancy endpoints leaves the switcher out. */
  async function loadIdentity(): Promise<void> {
    const [who, o, t, p] = await Promise.allSettled([
      authApi.me(),
      tenancyApi.orgs(),
      tenancyApi.teams(),
      tenancyApi.projects(),
    ]);
    me.value = who.status === 'fulfilled' ? who.value : null;
    orgs.value = o.status === 'fulfilled' ? o.value : [];
    teams.value = t.status === 'fulfilled' ? t.value : [];
    projects.value = p.status === 'fulfilled' ? p.value : [];
    identityError.value = who.status === 'rejected' ? failure('Who you are', who.reason) : null;
    const scopeFailure = [o, t, p].find((r) => r.status === 'rejected');
    // A server without tenancy endpoints (404) simply has no switcher.
    scopesError.value =
      scopeFailure?.status === 'rejected' && !isStatus(scopeFailure.reason, 404)
        ? failure('Organisations and projects', scopeFailure.reason)
        : null;
    if (!orgs.value.some((org) => org.id === scope.value.orgId)) selectOrg(orgs.value[0]?.id ?? null);
    else if (scope.value.projectId && !projectChoices.value.some((c) => c.id === scope.value.projectId))
      selectProject(null);
  }

  /**
   * The organisations, teams and projects read again (what someone made or removed since), when the person reaches
   * for the switcher: at most every few seconds, keeping the choice while it still exists.
   */
  let scopesReadAt = 0;
  async function refreshScopes(): Promise<void> {
    if (Date.now() - scopesReadAt < SCOPES_FRESH_MS) return;
    scopesReadAt = Date.now();
    const [o, t, p] = await Promise.allSettled([tenancyApi.orgs(), tenancyApi.teams(), tenancyApi.projects()]);
    // A failed read keeps what is shown: the switcher still works with what it had.
    if (o.status !== 'fulfilled' || t.status !== 'fulfilled' || p.status !== 'fulfilled') return;
    orgs.value = o.value;
    teams.value = t.value;
    projects.value = p.value;
    if (!orgs.value.some((org) => org.id === scope.value.orgId)) selectOrg(orgs.value[0]?.id ?? null);
    else if (scope.value.projectId && !projectChoices.value.some((c) => c.id === scope.value.projectId))
      selectProject(null);
  }

  function selectOrg(id: string | null): void {
    scope.value = { orgId: id, projectId: null };
    const choices = projectChoices.value;
    if (choices.length === 1) scope.value.projectId = choices[0]!.id;
  }

  function selectProject(id: string | null): void {
    scope.value.projectId = id;
  }

  function signIn(value: string): void {
    setToken(value.trim());
    token.value = getToken();
    needsSignIn.value = false;
  }

  function signOut(): void {
    setToken(null);
    token.value = null;
    me.value = null;
    needsSignIn.value = true;
  }

  onUnauthorized(() => {
    needsSignIn.value = true;
  });

  return {
    token,
    needsSignIn,
    linkPrompt,
    me,
    orgs,
    refreshScopes,
    teams,
    projects,
    scope,
    identityError,
    scopesError,
    projectChoices,
    projectTeams,
    createProject,
    inScope,
    takeTokenFromFragment,
    loadIdentity,
    selectOrg,
    selectProject,
    signIn,
    signOut,
  };
});
