import type { CatalogEntry } from '../assets/catalog';
import type { RoutingRule } from '../contracts/assets';
import { atLeast, type Access } from '../auth/access';
import type { Principal } from '../auth/principal';
import type { GraphDefinition, NodeConfig, RuleWarning, SavedNodeConfig } from '../contracts/runs';
import { DEFAULT_GATE_POLICY } from '../contracts/gate-policy';
import { gatesSkipped } from '../contracts/gate-skips';
import type { Role } from '../contracts/tenancy';
import type { ConfigScope, NodeConfigsRepository } from '../db/node-configs.repository';
import { badRequest, forbidden, notFound } from '../contracts/errors';
import { getLogger } from '../log';
import { compilePattern } from '../assets/route-pattern';
import { errorMessage } from '../contracts/errors';
import type { AgentDirectory } from './agent-directory';
import type { AuditLog } from '../auth/audit-log';

const log = getLogger('svc.api');

/** Where a request reads or writes phase configuration: `?project_id=` or `?org_id=` (at most one). */
export interface ConfigScopeQuery {
  projectId?: string;
  orgId?: string;
}

export interface PhaseConfigDeps {
  agents: Pick<AgentDirectory, 'resolve'>;
  access: Access;
  configs: NodeConfigsRepository;
  audit: AuditLog;
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

function describeRule(rule: RoutingRule): string {
  return rule.condition === 'always' ? `always → ${rule.target}` : `${rule.condition} "${rule.match}" → ${rule.target}`;
}

/** A warning for each gate a rule lets a run go past without stopping there (contracts/gate-skips.ts). */
function gateSkips(entry: CatalogEntry, node: string, config: NodeConfig): RuleWarning[] {
  return config.routing_overrides.flatMap((rule, index) =>
    gatesSkipped(entry.layout, node, rule.target).map((gate) => {
      const phase = entry.manifest.phases.find((p) => p.id === gate);
      const decideRole = phase?.gate?.decide_role ?? DEFAULT_GATE_POLICY.decide_role;
      return {
        rule: index,
        gate,
        decide_role: decideRole,
        message:
          `rule ${index + 1} (${describeRule(rule)}) skips the gate "${phase?.name ?? gate}": ` +
          `a run it matches goes on to ${rule.target} without waiting for the approval that ${decideRole} or higher gives`,
      };
    }),
  );
}

/**
 * Per-phase overrides, kept per organisation and per project, applied to every later run of the agent: a run uses,
 * node by node, its project's own record when there is one, else its organisation's.
 * Defaults come from the agent's generated manifest; overrides are shown apart from them.
 */
export function phaseConfigService(deps: PhaseConfigDeps) {
  const { agents, access, configs, audit } = deps;

  /**
   * A save or a removal in the audit log: the phase's own fields as `phase_config.set`, its routing rules (which may
   * skip a gate) as `routing_rules.set`, each when it changed; a save that changes nothing is one `phase_config.set`.
   */
  async function recordChange(
    principal: Principal,
    scope: ConfigScope,
    target: string,
    before: NodeConfig | undefined,
    after: NodeConfig | undefined,
  ): Promise<void> {
    const where = scope.type === 'org' ? { orgId: scope.id } : { projectId: scope.id };
    const fields = (c: NodeConfig | undefined) =>
      c
        ? {
            instructions_override: c.instructions_override,
            classification_labels: c.classification_labels,
            notes: c.notes,
          }
        : null;
    // In one key order, so a rule read back from the database compares equal to the same rule given.
    const rules = (c: NodeConfig | undefined) =>
      c && c.routing_overrides.length
        ? c.routing_overrides.map(({ condition, match, target, priority }) => ({ condition, match, target, priority }))
        : null;
    const routingChanged = JSON.stringify(rules(before)) !== JSON.stringify(rules(after));
    const fieldsChanged = JSON.stringify(fields(before)) !== JSON.stringify(fields(after));
    if (fieldsChanged || !routingChanged) {
      await audit.record(principal, {
        action: 'phase_config.set',
        ...where,
        target,
        before: fields(before),
        after: fields(after),
      });
    }
    if (routingChanged) {
      await audit.record(principal, {
        action: 'routing_rules.set',
        ...where,
        target,
        before: rules(before) && { routing_overrides: rules(before) },
        after: rules(after) && { routing_overrides: rules(after) },
      });
    }
  }

  /** The agent or command among what the caller sees (the project's offer, when one is named). */
  async function entryFor(principal: Principal, agent: string, query: ConfigScopeQuery): Promise<CatalogEntry> {
    return (await agents.resolve(principal, agent, query.projectId)).entry;
  }

  function phaseOf(entry: CatalogEntry, node: string) {
    const phase = entry.manifest.phases.find((p) => p.id === node);
    if (!phase) throw notFound(`${entry.manifest.name} has no node "${node}"`);
    return phase;
  }

  /**
   * The scope a request acts on, with the caller's role there checked: a project (viewer to read, owner to write),
   * an organisation (a role anywhere inside it to read, owner on it to write). Without either: the project a run
   * without project_id would go to (the default one for instance administrators, otherwise the caller's only
   * project; 400 listing them if several), so that what is read and saved is what those runs apply.
   */
  async function scopeFor(
    principal: Principal,
    query: ConfigScopeQuery,
    role: 'viewer' | 'owner',
  ): Promise<ConfigScope> {
    if (query.projectId && query.orgId)
      throw badRequest('invalid query parameters: give project_id or org_id, not both');
    if (query.orgId) {
      await access.requireOrgConfigRole(principal, query.orgId, role);
      return { type: 'org', id: query.orgId };
    }
    return { type: 'project', id: await access.resolveProject(principal, query.projectId, role) };
  }

  /**
   * The reads of what runs apply that are under way, per project and agent: runs started together (hundreds at once)
   * share one, rather than each queueing a statement of its own before its first phase. A change saved here is not
   * joined to a read that began before it.
   */
  const reading = new Map<string, Promise<ReadonlyMap<string, NodeConfig>>>();

  return {
    async graphDefinition(principal: Principal, agent: string, query: ConfigScopeQuery = {}): Promise<GraphDefinition> {
      const entry = await entryFor(principal, agent, query);
      const scope = await scopeFor(principal, query, 'viewer');
      const overrides =
        scope.type === 'project'
          ? await configs.effective(scope.id, entry.manifest.name)
          : new Map(
              [...(await configs.forAgent(scope, entry.manifest.name))].map(([node, config]) => [
                node,
                { config, from: 'organisation' as const },
              ]),
            );
      return {
        name: entry.manifest.name,
        kind: entry.manifest.kind,
        category: entry.manifest.category,
        entry: entry.layout.entry,
        phases: entry.manifest.phases.map((phase) => ({
          ...phase,
          overrides: overrides.get(phase.id)?.config ?? null,
          overrides_from: overrides.get(phase.id)?.from ?? null,
        })),
        edges: entry.layout.edges,
      };
    },

    /** The record saved on the scope itself (a project's own, not what it inherits), or an empty one. */
    async get(principal: Principal, agent: string, node: string, query: ConfigScopeQuery = {}): Promise<NodeConfig> {
      const entry = await entryFor(principal, agent, query);
      phaseOf(entry, node);
      const saved = await configs.forAgent(await scopeFor(principal, query, 'viewer'), entry.manifest.name);
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
      query: ConfigScopeQuery = {},
    ): Promise<SavedNodeConfig> {
      const entry = await entryFor(principal, agent, query);
      phaseOf(entry, node);
      validate(entry, node, config);
      const scope = await scopeFor(principal, query, 'owner');
      const warnings = gateSkips(entry, node, config);
      if (warnings.length) {
        // A rule past a gate is as good as that gate's approval: only someone who may give it may save one.
        const held: Role | null = await access.scopeRole(principal, scope.type, scope.id);
        const above = warnings.filter((w) => !atLeast(held, w.decide_role));
        if (above.length) {
          const where = scope.type === 'org' ? 'organisation' : 'project';
          const fields = above.map((w) => ({
            field: `routing_overrides.${w.rule}.target`,
            message:
              `skips the gate "${entry.manifest.phases.find((p) => p.id === w.gate)?.name ?? w.gate}", ` +
              `which only ${w.decide_role} or higher may decide; your role on this ${where} is ${held ?? 'none'}`,
          }));
          throw forbidden(
            `a routing rule may not skip a gate its author may not decide: ` +
              fields.map((f) => `${f.field}: ${f.message}`).join('; '),
            { fields },
          );
        }
      }
      const before = (await configs.forAgent(scope, entry.manifest.name)).get(node);
      await configs.save(scope, entry.manifest.name, node, config);
      reading.clear();
      await recordChange(principal, scope, `${entry.manifest.name} ${node}`, before, config);
      log.info(
        `node config saved agent=${entry.manifest.name} node=${node} ${scope.type}=${scope.id} user=${principal.name}` +
          (warnings.length ? ` skipping gates=${[...new Set(warnings.map((w) => w.gate))].join(',')}` : ''),
      );
      return { ...config, warnings };
    },

    /**
     * Removes the record saved on the scope: a project's phase then applies its organisation's overrides again,
     * an organisation's none. Needs what saving needs; 404 when nothing was saved there.
     */
    async remove(principal: Principal, agent: string, node: string, query: ConfigScopeQuery = {}): Promise<void> {
      const entry = await entryFor(principal, agent, query);
      phaseOf(entry, node);
      const scope = await scopeFor(principal, query, 'owner');
      const before = (await configs.forAgent(scope, entry.manifest.name)).get(node);
      const removed = await configs.remove(scope, entry.manifest.name, node);
      reading.clear();
      if (!removed) {
        throw notFound(
          `no configuration of ${entry.manifest.name}'s "${node}" is saved for this ${scope.type === 'org' ? 'organisation' : 'project'}`,
        );
      }
      log.info(
        `node config removed agent=${entry.manifest.name} node=${node} ${scope.type}=${scope.id} user=${principal.name}`,
      );
      await recordChange(principal, scope, `${entry.manifest.name} ${node}`, before, undefined);
    },

    /** What a run applies, node by node: its project's own overrides, else its organisation's. */
    forRun(agent: string, projectId: string): Promise<ReadonlyMap<string, NodeConfig>> {
      const key = `${projectId}\u0000${agent}`;
      let read = reading.get(key);
      if (!read) {
        read = configs
          .effective(projectId, agent)
          .then((effective) => new Map([...effective].map(([node, { config }]) => [node, config])))
          .finally(() => {
            if (reading.get(key) === read) reading.delete(key);
          });
        reading.set(key, read);
      }
      return read;
    },
  };
}

export type PhaseConfigService = ReturnType<typeof phaseConfigService>;
