import type { AssetSummary } from '@contracts/assets';
import { errorMessage } from '@contracts/errors';
import { defineStore } from 'pinia';
import { ref, watch } from 'vue';
import { agentsApi } from '../api/agents.api';
import { useSessionStore } from './session.store';

/** The view stays open across a reload of the page, as the other views do. */
const OPEN_KEY = 'svc.agents-view-open';

/**
 * The Agents view's list: the built-in agents and commands and those of one project (the project chosen in the
 * header, else the view's own choice), which is where a new agent is saved.
 */
export const useAgentsStore = defineStore('agents', () => {
  const session = useSessionStore();
  const open = ref(sessionStorage.getItem(OPEN_KEY) === 'true');
  const projectId = ref<string | null>(null);
  const agents = ref<AssetSummary[]>([]);
  const commands = ref<AssetSummary[]>([]);
  const loaded = ref(false);
  const error = ref<string | null>(null);
  /** Answers to an earlier project's list that arrive after a later one's are dropped. */
  let asked = 0;

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
    const ask = ++asked;
    try {
      const [agentList, commandList] = await agentsApi.list(projectId.value);
      if (ask !== asked) return;
      agents.value = agentList;
      commands.value = commandList;
      error.value = null;
    } catch (e) {
      if (ask === asked) error.value = `The agents could not be loaded: ${errorMessage(e)}`;
    }
    loaded.value = true;
  }

  function show(visible = true): void {
    open.value = visible;
    sessionStorage.setItem(OPEN_KEY, String(visible));
    if (visible) void load();
  }

  function chooseProject(id: string): void {
    projectId.value = id;
    loaded.value = false;
    void load();
  }

  watch(
    () => session.scope.projectId,
    (id) => open.value && id && chooseProject(id),
  );

  return { open, projectId, agents, commands, loaded, error, load, show, chooseProject };
});
