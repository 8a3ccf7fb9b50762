import type { Catalog, CatalogEntry } from '../assets/catalog';
import type { Access } from '../auth/access';
import type { Principal } from '../auth/principal';
import type { GraphDefinition, NodeConfig } from '../contracts/runs';
import type { NodeConfigsRepository } from '../db/node-configs.repository';
import { badRequest, notFound } from '../contracts/errors';
import { getLogger } from '../log';
import { compilePattern } from '../assets/route-pattern';
import { errorMessage } from '../contracts/errors';

const log = getLogger('svc.api');

export interface PhaseConfigDeps {
  catalog: Catalog;
  access: Access;
  configs: NodeConfigsRepository;
}

/** Checks what zod cannot: targets in this graph, patterns that compile, one rule per priority. */
function validate(entry: CatalogEntry, node: string, config: NodeConfig): void {
  const nodes = new Set(entry.layout.nodes.map((n) => n.id));
  const problems: { field: string; message: string }[] = [];
  const kind = entry.layout.nodes.find((n) => n.id === node)?.kind;
  if (kind !== 'llm' && config.routing_overrides.length > 0) {
    // A gate's approved/rejected edges are the graph's own and cannot be overridden.
    problems.push({
      field: 'routing_overrides',
      message: `"${node}" is a ${kind} node: its edges are defined by the graph`,
    });
  }
  const priorities = new Map<number, number>();
  config.routing_overrides.forEach((rule, index) => {
    const field = `routing_overrides.${index}`;
    if (!nodes.has(rule.target)) {
      problems.push({
        field: `${field}.target`,
        message: `node "${rule.target}" is not in the graph of ${entry.manifest.name}`,
      });
    }
    if (rule.condition === 'regex') {
      try {
        compilePattern(rule.match);
      } catch (error) {
        problems.push({ field: `${field}.match`, message: `invalid regular expression: ${errorMessage(error)}` });
      }
    } else if (rule.condition !== 'always' && rule.match === '') {
      problems.push({ field: `${field}.match`, message: `a ${rule.condition} rule needs a match value` });
    }
    const earlier = priorities.get(rule.priority);
    if (earlier !== undefined) {
      problems.push({
        field: `${field}.priority`,
        message: `priority ${rule.priority} is already used by routing_overrides.${earlier}`,
      });
    }
    priorities.set(rule.priority, index);
  });
  if (problems.length) {
    throw badRequest(`invalid request body: ${problems.map((p) => `${p.field}: ${p.message}`).join('; ')}`, {
      fields: problems,
    });
  }
}

/**
 * Per-phase overrides, kept per organisation and applied to every later run of the agent.
 * Contract defaults come from the generated runtime contract; overrides are shown apart from them.
 */
export function phaseConfigService(deps: PhaseConfigDeps) {
  const { catalog, access, configs } = deps;

  function entryFor(agent: string): CatalogEntry {
    const entry = catalog.get(agent);
    if (!entry) throw notFound(`no agent or command named "${agent}"`);
    return entry;
  }

  function phaseOf(entry: CatalogEntry, node: string) {
    const phase = entry.manifest.phases.find((p) => p.id === node);
    if (!phase) throw notFound(`${entry.manifest.name} has no node "${node}"`);
    return phase;
  }

  async function orgFor(principal: Principal, orgId: string | undefined, role: 'viewer' | 'owner'): Promise<string> {
    const org = orgId ?? (await access.orgIdOfProject(await access.defaultProjectId()));
    await access.requireOrgRole(principal, org, role);
    return org;
  }

  return {
    async graphDefinition(principal: Principal, agent: string, orgId?: string): Promise<GraphDefinition> {
      const entry = entryFor(agent);
      const overrides = await configs.forAgent(await orgFor(principal, orgId, 'viewer'), entry.manifest.name);
      return {
        name: entry.manifest.name,
        kind: entry.manifest.kind,
        category: entry.manifest.category,
        entry: entry.layout.entry,
        phases: entry.manifest.phases.map((phase) => ({ ...phase, overrides: overrides.get(phase.id) ?? null })),
        edges: entry.layout.edges,
      };
    },

    async get(principal: Principal, agent: string, node: string, orgId?: string): Promise<NodeConfig> {
      const entry = entryFor(agent);
      phaseOf(entry, node);
      const saved = await configs.forAgent(await orgFor(principal, orgId, 'viewer'), entry.manifest.name);
      return (
        saved.get(node) ?? {
          instructions_override: null,
          classification_labels: null,
          routing_overrides: [],
          notes: null,
        }
      );
    },

    async save(
      principal: Principal,
      agent: string,
      node: string,
      config: NodeConfig,
      orgId?: string,
    ): Promise<NodeConfig> {
      const entry = entryFor(agent);
      phaseOf(entry, node);
      validate(entry, node, config);
      const org = await orgFor(principal, orgId, 'owner');
      await configs.save(org, entry.manifest.name, node, config);
      log.info(`node config saved agent=${entry.manifest.name} node=${node} org=${org} user=${principal.name}`);
      return config;
    },

    /** What a run applies: the overrides of the organisation its project belongs to. */
    async forRun(agent: string, projectId: string | null): Promise<ReadonlyMap<string, NodeConfig>> {
      return configs.forProject(projectId ?? (await access.defaultProjectId()), agent);
    },
  };
}

export type PhaseConfigService = ReturnType<typeof phaseConfigService>;
