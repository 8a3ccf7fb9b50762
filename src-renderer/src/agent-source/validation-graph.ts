import type { AgentValidation } from '@contracts/agents';
import type { GraphDefinition } from '@contracts/runs';

/**
 * The graph a checked source would run, as the canvas draws a graph definition: the layout's edges and entry, with
 * the phases as compiled (their names and kinds). The check says nothing more of them, so the cards carry no tools,
 * routes or overrides.
 */
export function graphOfValidation(validation: AgentValidation): GraphDefinition | null {
  const { graph } = validation;
  if (!graph || !validation.kind) return null;
  return {
    name: validation.name ?? graph.layout.name,
    kind: validation.kind,
    category: graph.layout.name,
    entry: graph.layout.entry,
    phases: graph.phases.map((phase) => ({
      ...phase,
      description: '',
      expected_output: '',
      classification_options: [],
      required_approval_context: [],
      routes: [],
      overrides: null,
      overrides_from: null,
    })),
    edges: graph.layout.edges,
  };
}
