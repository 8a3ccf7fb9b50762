import type { AssetSummary } from '@contracts/assets';
import type { GraphDefinition, NodeConfig, RuleWarning } from '@contracts/runs';
import { defineStore } from 'pinia';
import { errorMessage } from '@contracts/errors';
import { ref } from 'vue';
import { assetsApi } from '../api/assets.api';
import type { PhaseNamer } from './gate-decision';
import { useSessionStore } from './session.store';

/** Agents and commands, and the graph definition of the one selected. */
export const useCatalogStore = defineStore('catalog', () => {
  const agents = ref<AssetSummary[]>([]);
  const commands = ref<AssetSummary[]>([]);
  const selected = ref<string | null>(null);
  const graph = ref<GraphDefinition | null>(null);
  /** Why the selected asset's graph could not be loaded; the canvas is empty then. */
  const graphError = ref<string | null>(null);

  const session = useSessionStore();

  async function load(): Promise<void> {
    [agents.value, commands.value] = await Promise.all([assetsApi.agents(), assetsApi.commands()]);
    if (!selected.value) await select(agents.value[0]?.name ?? commands.value[0]?.name ?? null);
  }

  /** Never throws: a graph that fails to load leaves `graphError` for the canvas to show with a Retry. */
  async function select(name: string | null): Promise<void> {
    selected.value = name;
    graphError.value = null;
    try {
      graph.value = name ? await assetsApi.graph(name, session.scope) : null;
    } catch (e) {
      if (selected.value !== name) return;
      graph.value = null;
      graphError.value = `The graph of ${name} could not be loaded: ${errorMessage(e)}`;
    }
  }

  /** Saves a phase's overrides; answers the warnings of its rules that skip a gate. */
  async function saveConfig(node: string, config: NodeConfig): Promise<RuleWarning[]> {
    if (!selected.value) return [];
    const saved = await assetsApi.saveNodeConfig(selected.value, node, config, session.scope);
    graph.value = await assetsApi.graph(selected.value, session.scope);
    return saved.warnings;
  }

  /** The project chosen goes back to its organisation's overrides for this phase. */
  async function removeProjectConfig(node: string): Promise<void> {
    if (!selected.value || !session.scope.projectId) return;
    await assetsApi.removeNodeConfig(selected.value, node, session.scope);
    graph.value = await assetsApi.graph(selected.value, session.scope);
  }

  /**
   * Phases by their names ("Approve publishing", not "gate") for a run of `agent`, when its graph is the one loaded;
   * by their ids otherwise (another agent's run in the inbox, a draft's run).
   */
  function phaseNamer(agent: string | null | undefined): PhaseNamer {
    const phases = graph.value && graph.value.name === agent ? graph.value.phases : [];
    return (id) => phases.find((p) => p.id === id)?.name ?? id;
  }

  return {
    agents,
    commands,
    selected,
    graph,
    graphError,
    load,
    select,
    saveConfig,
    removeProjectConfig,
    phaseNamer,
  };
});
