import type { AgentDetail, AgentValidation, AgentVersion, SourceProblem } from '@contracts/agents';
import { errorMessage } from '@contracts/errors';
import { defineStore } from 'pinia';
import { computed, ref, watch } from 'vue';
import { agentsApi, sourceProblemsOf } from '../api/agents.api';
import { copyName, nameOf, withName } from '../agent-source/agent-template';
import { useAgentsStore } from './agents.store';
import { useCatalogStore } from './catalog.store';
import { useDraftRunStore } from './draft-run.store';

/** How long typing pauses before the source is checked: each key does not cost a request. */
export const CHECK_DELAY_MS = 300;

/** Where the text in the editor came from, said above it until it is saved. */
export type DraftOrigin = 'blank' | 'copy' | 'import';

/**
 * The agent editor: the source being written (a stored agent's, a built-in's to read and copy, or a new one), checked
 * as one types, saved as a new agent of the Agents view's project or as a new version of a stored one; a stored
 * agent's history, two of its versions compared, an earlier one restored; and deleting it.
 */
export const useAgentEditorStore = defineStore('agent-editor', () => {
  const list = useAgentsStore();
  const draftRun = useDraftRunStore();
  /** Whether the editor is showing anything. */
  const active = ref(false);
  /** The agent as the server has it; null for a new one not saved yet. */
  const agent = ref<AgentDetail | null>(null);
  /** A new agent's beginning: blank, a copy of which agent, or an imported file's name. */
  const draftOrigin = ref<{ kind: DraftOrigin; from: string | null } | null>(null);
  const source = ref('');
  /** The text as last saved or opened: what "unsaved changes" compares with. */
  const savedSource = ref('');
  const validation = ref<AgentValidation | null>(null);
  const checking = ref(false);
  const checkError = ref<string | null>(null);
  /** Why opening, saving, restoring or deleting failed; null when the last one worked. */
  const error = ref<string | null>(null);
  /** What the last action did, said to the person (role="status"). */
  const notice = ref<string | null>(null);
  const saving = ref(false);
  const versions = ref<AgentVersion[]>([]);
  const historyError = ref<string | null>(null);

  const readOnly = computed(() => agent.value?.origin === 'built_in');
  const dirty = computed(() => source.value !== savedSource.value);
  const problems = computed<SourceProblem[]>(() => validation.value?.problems ?? []);
  /** The stored agent's name, else the one the source gives (as checked, or as written while it has problems). */
  const name = computed(() => agent.value?.name ?? validation.value?.name ?? nameOf(source.value));

  let timer: ReturnType<typeof setTimeout> | undefined;
  let checkController: AbortController | null = null;
  /** The text the last check was asked for: the same text is not checked twice. */
  let asked: string | null = null;
  /** Checks the text now: an answer for a text since changed is dropped, as is one for an aborted check. */
  async function check(): Promise<void> {
    clearTimeout(timer);
    checkController?.abort();
    const controller = new AbortController();
    checkController = controller;
    const text = source.value;
    asked = text;
    if (!text.trim()) {
      validation.value = { valid: false, problems: [], name: null, kind: null, graph: null };
      checking.value = false;
      return;
    }
    checking.value = true;
    try {
      const answer = await agentsApi.validate(text, controller.signal);
      if (controller.signal.aborted || text !== source.value) return;
      validation.value = answer;
      checkError.value = null;
    } catch (e) {
      if (!controller.signal.aborted) checkError.value = `The source could not be checked: ${errorMessage(e)}`;
    } finally {
      if (checkController === controller) checking.value = false;
    }
  }
  watch(source, (text) => {
    if (!active.value || text === asked) return;
    clearTimeout(timer);
    checking.value = true;
    timer = setTimeout(() => void check(), CHECK_DELAY_MS);
  });

  function reset(): void {
    asked = null;
    error.value = null;
    notice.value = null;
    validation.value = null;
    checkError.value = null;
    versions.value = [];
    historyError.value = null;
    draftRun.clear();
  }

  /** Opens an agent or command of the list: its current source, and its versions when it is stored. */
  async function open(agentName: string): Promise<void> {
    reset();
    try {
      const detail = await agentsApi.get(agentName, list.projectId);
      agent.value = detail;
      draftOrigin.value = null;
      source.value = savedSource.value = detail.source ?? '';
      active.value = true;
      if (detail.source === null) {
        error.value = `The file of ${agentName} is not shipped with this server: there is no text to show or copy.`;
        validation.value = { valid: false, problems: [], name: null, kind: null, graph: null };
      } else void check();
      if (detail.origin === 'stored') await loadVersions();
    } catch (e) {
      error.value = `${agentName} could not be opened: ${errorMessage(e)}`;
    }
  }

  /** A new agent from a text: the template, a copy or an imported file. Nothing is saved until Save. */
  function startNew(text: string, kind: DraftOrigin, from: string | null = null): void {
    reset();
    agent.value = null;
    draftOrigin.value = { kind, from };
    // Changed from where it began, a new agent's text has changes to lose (it can be saved as it is, too).
    savedSource.value = text;
    source.value = text;
    active.value = true;
    void check();
  }

  /** A copy of the text in the editor (with what is not saved yet) under the name `<name>-copy`: a new agent. */
  function copyOpen(): void {
    const from = name.value ?? 'agent';
    startNew(withName(source.value, copyName(from)), 'copy', from);
  }

  /** A copy of an agent or command: its text under the name `<name>-copy`, to save as a new agent. */
  async function copy(agentName: string): Promise<void> {
    try {
      const detail = await agentsApi.get(agentName, list.projectId);
      if (detail.source === null) {
        error.value = `The file of ${agentName} is not shipped with this server: there is no text to copy.`;
        return;
      }
      startNew(withName(detail.source, copyName(agentName)), 'copy', agentName);
    } catch (e) {
      error.value = `${agentName} could not be copied: ${errorMessage(e)}`;
    }
  }

  /** Shows the server's refusal: a source's problems at their lines, anything else as the error. */
  function refused(e: unknown, what: string): void {
    const found = sourceProblemsOf(e);
    if (found?.length) {
      validation.value = { valid: false, problems: found, name: null, kind: null, graph: null };
      error.value = `${what}: the source has ${found.length === 1 ? 'a problem' : `${found.length} problems`} (listed below the editor).`;
    } else error.value = `${what}: ${errorMessage(e)}`;
  }

  /** Saves the text: a new agent of the view's project (version 1), or a new version of the stored one. */
  async function save(note: string): Promise<boolean> {
    if (saving.value) return false;
    const current = agent.value;
    if (!current && !list.projectId) {
      error.value = 'Not saved: choose a project to save the agent in.';
      return false;
    }
    saving.value = true;
    error.value = null;
    notice.value = null;
    const text = source.value;
    try {
      const saved =
        current?.origin === 'stored'
          ? await agentsApi.update(current.name, current.project_id, { source: text, note })
          : await agentsApi.create(list.projectId!, { source: text, note });
      agent.value = saved;
      draftOrigin.value = null;
      savedSource.value = text;
      notice.value = `Saved ${saved.name} as version ${saved.version}.`;
      await Promise.all([loadVersions(), list.load(), refreshCatalog()]);
      return true;
    } catch (e) {
      refused(e, 'Not saved');
      return false;
    } finally {
      saving.value = false;
    }
  }

  async function loadVersions(): Promise<void> {
    const current = agent.value;
    if (current?.origin !== 'stored') return;
    try {
      versions.value = await agentsApi.versions(current.name, current.project_id);
      historyError.value = null;
    } catch (e) {
      historyError.value = `The history could not be loaded: ${errorMessage(e)}`;
    }
  }

  /** The text of a version of the agent open, each read once. */
  const versionTexts = new Map<string, string>();
  async function versionSource(version: number): Promise<string> {
    const current = agent.value!;
    const key = `${current.project_id}:${current.name}:${version}`;
    const known = versionTexts.get(key);
    if (known !== undefined) return known;
    const detail = await agentsApi.version(current.name, version, current.project_id);
    versionTexts.set(key, detail.source);
    return detail.source;
  }

  /** Makes an earlier version current again, as a new version with its text; the editor shows that text. */
  async function restore(version: number): Promise<boolean> {
    const current = agent.value;
    if (current?.origin !== 'stored') return false;
    error.value = null;
    notice.value = null;
    try {
      const restored = await agentsApi.restore(current.name, version, current.project_id);
      agent.value = restored;
      source.value = savedSource.value = restored.source ?? '';
      notice.value = `Version ${version} restored as version ${restored.version}.`;
      await Promise.all([loadVersions(), list.load()]);
      return true;
    } catch (e) {
      refused(e, `Version ${version} was not restored`);
      return false;
    }
  }

  /** Deletes the stored agent open; its runs stay readable. */
  async function remove(): Promise<boolean> {
    const current = agent.value;
    if (current?.origin !== 'stored') return false;
    error.value = null;
    try {
      await agentsApi.remove(current.name, current.project_id);
    } catch (e) {
      error.value = `${current.name} was not deleted: ${errorMessage(e)}`;
      return false;
    }
    close();
    notice.value = `${current.name} deleted.`;
    await Promise.all([list.load(), refreshCatalog()]);
    return true;
  }

  /** The studio's own list of agents (beside the canvas) shows a new or deleted agent too. */
  async function refreshCatalog(): Promise<void> {
    await useCatalogStore()
      .load()
      .catch(() => undefined);
  }

  function close(): void {
    clearTimeout(timer);
    checkController?.abort();
    reset();
    active.value = false;
    agent.value = null;
    draftOrigin.value = null;
    source.value = savedSource.value = '';
  }

  return {
    active,
    agent,
    draftOrigin,
    source,
    savedSource,
    validation,
    checking,
    checkError,
    error,
    notice,
    saving,
    versions,
    historyError,
    readOnly,
    dirty,
    problems,
    name,
    open,
    startNew,
    copy,
    copyOpen,
    save,
    loadVersions,
    versionSource,
    restore,
    remove,
    close,
  };
});
