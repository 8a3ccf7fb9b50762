import { randomUUID } from 'node:crypto';
import type { Access } from '../auth/access';
import type { Principal } from '../auth/principal';
import { compileAgentSource } from '../assets/agent-source';
import { DEFAULT_LAYOUTS } from '../assets/asset-compiler';
import type {
  AgentDetail,
  AgentValidation,
  AgentVersion,
  AgentVersionDetail,
  SaveAgentRequest,
  SourceProblem,
  TryAgentRequest,
} from '../contracts/agents';
import type { GraphLayout, Manifest } from '../contracts/assets';
import { badRequest, conflict, notFound } from '../contracts/errors';
import type { McpServer } from '../contracts/tools';
import { isNameTaken, type AgentsRepository, type PinnedManifest } from '../db/agents.repository';
import { getLogger } from '../log';
import { pinOf, type AgentDirectory, type ResolvedAgent } from './agent-directory';
import type { AuditLog } from '../auth/audit-log';
import type { FollowableRun, RunsService } from './runs.service';

const log = getLogger('svc.api');

export interface AgentsServiceDeps {
  agents: AgentDirectory;
  rows: AgentsRepository;
  access: Access;
  /** The instance's registered MCP servers, which a stored agent names instead of declaring a program. */
  registry(): Promise<ReadonlyMap<string, McpServer>>;
  /** The shipped custom layouts by category: a stored agent runs on these or the defaults. */
  layouts: ReadonlyMap<string, GraphLayout>;
  runs: Pick<RunsService, 'startDraft'>;
  audit: AuditLog;
}

/** What the audit log keeps of a stored agent: which, at which version, shared or not; never its whole source. */
const kept = (a: AgentDetail) => ({ name: a.name, kind: a.kind, version: a.version, shared: a.shared });

/** The 400 of a source with problems: each at its line and field in `details.problems`, the first in the message. */
function invalidSource(problems: SourceProblem[]) {
  const [first] = problems;
  const where = first!.line === null ? first!.field : `line ${first!.line}: ${first!.field}`;
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : '';
  return badRequest(`invalid agent source: ${where}: ${first!.message}${more}`, { problems });
}

/**
 * Agents and commands people make: written as the asset file's text, checked by the build's compiler, stored per
 * project with every save an immutable version, tried before they are saved. A project's owners change its agents;
 * its members run them; its viewers read them; an organisation's administrators share one with every project in it.
 */
export function agentsService(deps: AgentsServiceDeps) {
  const { agents, rows, access, audit } = deps;

  /** A stored agent made, changed or deleted, in the audit log of its project. */
  async function record(principal: Principal, before: AgentDetail | null, after: AgentDetail | null): Promise<void> {
    const agent = (after ?? before)!;
    await audit.record(principal, {
      action: !before ? 'agent.created' : !after ? 'agent.deleted' : 'agent.changed',
      projectId: agent.project_id,
      target: `${agent.kind} ${agent.name}`,
      before: before && kept(before),
      after: after && kept(after),
    });
  }

  async function compile(source: string): Promise<{ pinned?: PinnedManifest; problems: SourceProblem[] }> {
    const result = compileAgentSource(source, { layouts: deps.layouts, registry: await deps.registry(), stored: true });
    if (!result.manifest) return { problems: result.problems };
    const layout = layoutOf(result.manifest);
    return { pinned: pinOf(result.manifest, layout), problems: [] };
  }

  const layoutOf = (manifest: Manifest): GraphLayout =>
    deps.layouts.get(manifest.graph) ?? DEFAULT_LAYOUTS[manifest.kind];

  async function compiled(source: string): Promise<PinnedManifest> {
    const { pinned, problems } = await compile(source);
    if (!pinned) throw invalidSource(problems);
    return pinned;
  }

  function detailOf(agent: ResolvedAgent): AgentDetail {
    const { manifest } = agent.entry;
    const stored = agent.stored;
    return {
      name: manifest.name,
      kind: manifest.kind,
      description: manifest.description,
      category: manifest.category,
      origin: stored ? 'stored' : 'built_in',
      project_id: stored?.projectId ?? null,
      shared: stored?.shared ?? false,
      version: agent.version,
      source: stored ? stored.source : agents.catalog.source(manifest.name),
      updated_at: stored?.updatedAt ?? null,
      updated_by: stored?.updatedBy ?? null,
    };
  }

  /** A stored agent the caller may change: 409 for a built-in, 403 below owner on its project. */
  async function changeable(principal: Principal, name: string, projectId?: string): Promise<ResolvedAgent> {
    const agent = await agents.resolve(principal, name, projectId);
    if (!agent.stored) throw conflict(`"${name}" is built in and read-only: copy it to make your own`);
    await access.requireProjectRole(principal, agent.stored.projectId, 'owner', `agent ${name}`);
    return agent;
  }

  /** Reads a change this process made before answering: the caller's next request sees it, on any process. */
  async function stored(agentId: string, name: string): Promise<ResolvedAgent> {
    await agents.changed(agentId);
    const agent = agents.storedById(agentId);
    if (!agent) throw notFound(`no agent or command named "${name}"`);
    return agent;
  }

  return {
    async validate(source: string): Promise<AgentValidation> {
      const { pinned, problems } = await compile(source);
      if (!pinned) return { valid: false, problems, name: null, kind: null, graph: null };
      const { manifest, layout } = pinned;
      return {
        valid: true,
        problems: [],
        name: manifest.name,
        kind: manifest.kind,
        graph: { layout, phases: manifest.phases.map(({ id, name, kind }) => ({ id, name, kind })) },
      };
    },

    async get(principal: Principal, name: string, projectId?: string): Promise<AgentDetail> {
      return detailOf(await agents.resolve(principal, name, projectId));
    },

    async create(principal: Principal, projectId: string, body: SaveAgentRequest): Promise<AgentDetail> {
      await access.requireProjectRole(principal, projectId, 'owner', `project ${projectId}`);
      const pinned = await compiled(body.source);
      const { name, kind } = pinned.manifest;
      if (agents.isBuiltInName(name)) throw nameConflict(name, 'built_in');
      const orgId = await access.orgIdOfProject(projectId);
      const id = randomUUID();
      try {
        await rows.create(
          { id, orgId, projectId, kind },
          { source: body.source, pinned, note: body.note, createdBy: principal.id },
        );
      } catch (error) {
        if (isNameTaken(error)) throw nameConflict(name, 'stored');
        throw error;
      }
      log.info(`agent ${name} created in project ${projectId} by ${principal.name}`);
      const created = detailOf(await stored(id, name));
      await record(principal, null, created);
      return created;
    },

    async update(principal: Principal, name: string, body: SaveAgentRequest, projectId?: string) {
      const agent = await changeable(principal, name, projectId);
      const pinned = await compiled(body.source);
      if (pinned.manifest.name !== name) {
        throw invalidSource([
          {
            line: null,
            field: 'name',
            message: `must stay "${name}": an agent keeps its name (copy it to make one under another)`,
          },
        ]);
      }
      const version = await rows.addVersion(agent.stored!.id, {
        source: body.source,
        pinned,
        note: body.note,
        createdBy: principal.id,
      });
      if (version === undefined) throw notFound(`no agent or command named "${name}"`);
      log.info(`agent ${name} version ${version} saved by ${principal.name}`);
      const changed = detailOf(await stored(agent.stored!.id, name));
      await record(principal, detailOf(agent), changed);
      return changed;
    },

    async share(principal: Principal, name: string, shared: boolean, projectId?: string): Promise<AgentDetail> {
      const agent = await agents.resolve(principal, name, projectId);
      if (!agent.stored) throw conflict(`"${name}" is built in: every project has it already`);
      await access.requireOrgConfigRole(principal, agent.stored.orgId, 'admin');
      await rows.setShared(agent.stored.id, shared);
      log.info(
        `agent ${name} ${shared ? 'shared with' : 'no longer shared with'} its organisation by ${principal.name}`,
      );
      const changed = detailOf(await stored(agent.stored.id, name));
      await record(principal, detailOf(agent), changed);
      return changed;
    },

    async remove(principal: Principal, name: string, projectId?: string): Promise<void> {
      const agent = await changeable(principal, name, projectId);
      const paused = await rows.remove(
        agent.stored!.id,
        principal.id,
        `paused: the agent "${name}" it runs was deleted by ${principal.name}`,
      );
      await agents.changed(agent.stored!.id);
      log.info(`agent ${name} deleted by ${principal.name}${paused ? `; ${paused} schedule(s) paused` : ''}`);
      await record(principal, detailOf(agent), null);
    },

    async versions(principal: Principal, name: string, projectId?: string): Promise<AgentVersion[]> {
      const agent = await agents.resolve(principal, name, projectId);
      // A built-in has no saved versions: it is what the shipped file says (its version is its content hash).
      return agent.stored ? rows.versions(agent.stored.id) : [];
    },

    async version(principal: Principal, name: string, n: number, projectId?: string): Promise<AgentVersionDetail> {
      const agent = await agents.resolve(principal, name, projectId);
      const found = agent.stored ? await rows.version(agent.stored.id, n) : undefined;
      if (!found) throw notFound(`"${name}" has no version ${n}`);
      return found;
    },

    /** Makes an earlier version current again, as a new version with its text: the history only grows. */
    async restore(principal: Principal, name: string, n: number, projectId?: string): Promise<AgentDetail> {
      const agent = await changeable(principal, name, projectId);
      const earlier = await rows.version(agent.stored!.id, n);
      if (!earlier) throw notFound(`"${name}" has no version ${n}`);
      // Compiled again: the rules (a server registered then, gone now) are today's.
      const pinned = await compiled(earlier.source);
      const version = await rows.addVersion(agent.stored!.id, {
        source: earlier.source,
        pinned,
        note: `restored version ${n}`,
        createdBy: principal.id,
      });
      if (version === undefined) throw notFound(`no agent or command named "${name}"`);
      log.info(`agent ${name} version ${n} restored as version ${version} by ${principal.name}`);
      const changed = detailOf(await stored(agent.stored!.id, name));
      await record(principal, detailOf(agent), changed);
      return changed;
    },

    /** Runs an unsaved source on a message in a new thread of the project, flagged as a draft. */
    async try(principal: Principal, projectId: string, body: TryAgentRequest): Promise<FollowableRun> {
      await access.requireProjectRole(principal, projectId, 'owner', `project ${projectId}`);
      const pinned = await compiled(body.source);
      await rows.recordManifests([pinned]);
      return deps.runs.startDraft(principal, projectId, pinned, body);
    },
  };
}

function nameConflict(name: string, taken: 'built_in' | 'stored') {
  return conflict(
    taken === 'built_in'
      ? `"${name}" is the name of a built-in agent or command: give yours another name`
      : `an agent or command named "${name}" exists in this organisation already: give yours another name`,
  );
}

export type AgentsService = ReturnType<typeof agentsService>;
