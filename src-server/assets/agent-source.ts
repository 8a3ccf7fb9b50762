import type { GraphLayout, Manifest } from '../contracts/assets';
import type { McpServer } from '../contracts/tools';
import { compileAsset, isBuiltInLayout } from './asset-compiler';
import { AssetError } from './asset-error';

/**
 * An agent's text checked at run time, as the build checks a shipped file and by the same checks, but reporting
 * every problem it finds rather than the first: the studio shows them all beside the text a user writes.
 */

/** One problem: its 1-based line in the whole text (the frontmatter starts at line 2), where there is one. */
export interface SourceProblem {
  line: number | null;
  /** As fieldName() writes it (`phases.analysis.routes[0].target`), or `(frontmatter)`, `(body)`, `(top level)`. */
  field: string;
  message: string;
}

export interface AgentSourceOptions {
  /**
   * Custom layouts by category (the shipped assets/graphs ones, as generated/ holds them); built-in defaults always
   * apply.
   */
  layouts: ReadonlyMap<string, GraphLayout>;
  /** The instance's registered MCP servers by name (an administrator's registry); a declaration may name one. */
  registry: ReadonlyMap<string, McpServer>;
  /** Text written by a user and stored (true), not a shipped file: the stored-agent rules apply. */
  stored: boolean;
  /** Shown as the file in nothing user-facing; used only where an AssetSource needs a `file`. Default 'agent'. */
  label?: string;
}

export type AgentSourceResult =
  { manifest: Manifest; problems: [] } | { manifest: undefined; problems: SourceProblem[] };

/** The `source` of a stored agent's manifest: it has no file. */
export const STORED_SOURCE = 'stored';

/**
 * Compiles an agent's or a command's text. Its kind is its `kind` field, or else a command when its phases are nodes
 * of the default command layout and none of the agent layout's. The manifest's `source` is STORED_SOURCE for stored
 * text and the label otherwise. Problems come in line order.
 */
export function compileAgentSource(text: string, options: AgentSourceOptions): AgentSourceResult {
  const label = options.label ?? 'agent';
  const problems: AssetError[] = [];
  // generated/ holds the built-in layouts too: their categories are not custom ones.
  const layouts = new Map([...options.layouts].filter(([, layout]) => !isBuiltInLayout(layout.name)));
  try {
    const { manifest } = compileAsset({ file: label, problems }, text, {
      layouts,
      registry: options.registry,
      stored: options.stored,
      sourcePath: options.stored ? STORED_SOURCE : label,
    });
    return { manifest, problems: [] };
  } catch (error) {
    if (!(error instanceof AssetError)) throw error;
    problems.push(error);
  }
  return {
    manifest: undefined,
    problems: problems
      .map((p) => ({ line: p.line ?? null, field: p.field, message: p.detail }))
      .sort((a, b) => (a.line ?? 0) - (b.line ?? 0)),
  };
}
