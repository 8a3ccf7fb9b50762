import type { Manifest, Phase } from '../contracts/assets';
import {
  PROJECT_PATH_PLACEHOLDER,
  PROJECT_TOOLS_SERVER,
  type McpServer,
  type ToolDefinition,
  type ToolPolicy,
  type ToolResult,
} from '../contracts/tools';
import type { QuestionAsker } from '../contracts/tool-questions';
import type { ToolSpec } from '../models/model-client';
import { sha256Hex } from './canonical-arguments';
import type { McpServers } from './mcp-servers';
import { callProjectTool, PROJECT_TOOLS } from './project-tools';
import { patternNames, resolvePolicy, type ResolvedPolicy } from './tool-policy';

/** The tools one phase of one run may use: offered to its model, each with its policy. */
export interface PhaseToolset {
  /** What the model is offered: the phase's tools but those its policy denies, under names every provider takes. */
  readonly specs: readonly ToolSpec[];
  /** The offered tool a model's call names (by its offered name); undefined when none is offered under that name. */
  offered(modelName: string): ToolDefinition | undefined;
  /** A tool of the phase by its full name (`<server>.<tool>`), offered or not: a publish step names one. */
  named(fullName: string): ToolDefinition | undefined;
  policy(tool: ToolDefinition): ResolvedPolicy;
  /**
   * Runs a call: its answer, or an error answer (a time-out, a server gone); throws only when `signal` aborts. `ask`
   * puts a question the tool's MCP server asks mid-call to a person.
   */
  call(
    tool: ToolDefinition,
    args: Record<string, unknown>,
    signal: AbortSignal,
    ask?: QuestionAsker,
  ): Promise<ToolResult>;
}

/** Where a run's tools act: its project (for the project tools and the servers' `{project_path}`). */
export interface ToolScope {
  projectId: string;
  projectPath: string | null;
}

/** Every tool of every run: the built-in project tools and the MCP servers the assets declare. */
export interface Toolbox {
  forPhase(scope: ToolScope, manifest: Manifest, phase: Phase, signal: AbortSignal): Promise<PhaseToolset>;
  close(): Promise<void>;
}

/**
 * The name a model is offered a tool under: providers take `^[A-Za-z0-9_-]{1,64}$`, so `server.tool` becomes
 * `server__tool` (a long one is shortened, made unique by a hash of the full name).
 */
export function modelToolName(fullName: string, hash: (text: string) => string): string {
  const name = fullName.replace('.', '__');
  return name.length <= 64 ? name : `${name.slice(0, 55)}_${hash(fullName).slice(0, 8)}`;
}

/** What the toolbox needs of the MCP servers: their tools, and a call (the engine's tests give it none). */
export type McpPool = Pick<McpServers, 'tools' | 'call' | 'close'>;

export interface ToolboxDeps {
  mcp: McpPool;
  /**
   * Runs `use` in a project path's folder (a git URL's clone is held meanwhile, and not writable), checked again for
   * the project's organisation.
   */
  projectFolder<T>(
    project: { projectId: string; projectPath: string },
    use: (folder: string, writable: boolean) => Promise<T>,
  ): Promise<T>;
  /**
   * The tool policies of the project's organisation: a floor no agent's policies loosen (resolvePolicy). Read when a
   * phase that uses tools starts (or goes on after a decision), so a change applies from the next such phase.
   */
  policyFloor(projectId: string): Promise<readonly ToolPolicy[]>;
  /** A project tool's time limit (MCP servers have theirs in the pool). */
  callTimeoutMs: number;
}

/** The project tools and the declared MCP servers, as the phases of runs use them. */
export function createToolbox(deps: ToolboxDeps): Toolbox {
  return {
    async forPhase(scope, manifest, phase, signal) {
      const patterns = [...(phase.tools?.tools ?? []), ...(phase.publish ? [phase.publish.tool] : [])];
      const serverOf = (pattern: string) => pattern.slice(0, pattern.indexOf('.'));
      const servers = new Set(patterns.map(serverOf));
      const inFolder = <T>(use: (folder: string | null, writable: boolean) => Promise<T>): Promise<T> =>
        scope.projectPath
          ? deps.projectFolder({ projectId: scope.projectId, projectPath: scope.projectPath }, use)
          : use(null, false);

      const definitions: ToolDefinition[] = [];
      if (servers.has(PROJECT_TOOLS_SERVER) && scope.projectPath) definitions.push(...PROJECT_TOOLS);
      // A server started in the run's project folder has nothing to work on without one: its tools are not offered.
      const reachable = (s: McpServer) =>
        scope.projectPath !== null ||
        s.transport !== 'stdio' ||
        !s.args.some((a) => a.includes(PROJECT_PATH_PLACEHOLDER));
      for (const server of manifest.tools.servers.filter((s) => servers.has(s.name) && reachable(s))) {
        definitions.push(...(await inFolder((folder) => deps.mcp.tools(scope.projectId, server, folder, signal))));
      }
      const floor = await deps.policyFloor(scope.projectId);
      const policyOf = (tool: ToolDefinition) => resolvePolicy(manifest.tools.policies, tool, floor);
      const policies = new Map(definitions.map((d) => [d.name, policyOf(d)]));
      const ofPhase = definitions.filter((d) => (phase.tools?.tools ?? []).some((p) => patternNames(p, d)));
      // A denied tool is never offered: the model does not learn it exists.
      const offered = new Map(
        ofPhase.filter((d) => policies.get(d.name)!.kind !== 'deny').map((d) => [modelToolName(d.name, sha256Hex), d]),
      );
      return {
        specs: [...offered].map(([name, d]) => ({ name, description: d.description, parameters: d.inputSchema })),
        offered: (modelName) => offered.get(modelName),
        named: (fullName) => definitions.find((d) => d.name === fullName),
        policy: (tool) => policies.get(tool.name) ?? policyOf(tool),
        call: (tool, args, callSignal, ask) =>
          inFolder(async (folder, writable) => {
            if (tool.server === PROJECT_TOOLS_SERVER) {
              if (!folder) return { text: 'Not run: this run has no project path.', is_error: true };
              return callProjectTool(
                { root: folder, writable, timeoutMs: deps.callTimeoutMs },
                tool.tool,
                args,
                callSignal,
              );
            }
            const server = manifest.tools.servers.find((s) => s.name === tool.server)!;
            return deps.mcp.call(scope.projectId, server, folder, tool.tool, args, callSignal, ask);
          }),
      };
    },
    close: () => deps.mcp.close(),
  };
}
