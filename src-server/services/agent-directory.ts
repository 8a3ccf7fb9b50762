import { createHash } from 'node:crypto';
import type { Catalog, CatalogEntry } from '../assets/catalog';
import type { Access } from '../auth/access';
import type { Principal } from '../auth/principal';
import type { AssetKind, GraphLayout, Manifest } from '../contracts/assets';
import { conflict, notFound } from '../contracts/errors';
import type { AgentsRepository, PinnedManifest, StoredAgent } from '../db/agents.repository';
import { getLogger } from '../log';

const log = getLogger('svc.assets');

/** The content hash a run is pinned to: the same manifest and layout give the same hash on every process. */
export function pinOf(manifest: Manifest, layout: GraphLayout): PinnedManifest {
  const hash = createHash('sha256').update(JSON.stringify({ manifest, layout })).digest('hex');
  return { hash, manifest, layout };
}

/** A built-in's version, as runs and the API show it: the start of its manifest's hash. */
export const builtInVersion = (hash: string) => hash.slice(0, 12);

/** An agent or command a run may start: what it runs, and the version it records. */
export interface ResolvedAgent {
  entry: CatalogEntry;
  /** `3` for a stored agent's version 3; a built-in's content hash prefix. */
  version: string;
  hash: string;
  /** The stored agent, for one made in a project; undefined for a built-in. */
  stored?: StoredAgent;
}

/** Immutable manifests read by hash, kept by every process: a few hundred covers every version runs wait on. */
const PINNED_CACHE = 500;

/**
 * Every agent and command this process can run: the built-ins (the shipped files, read at start) and the ones stored
 * in projects, kept in memory at their current versions and read again when another process announces a change
 * (svc_agents' trigger), so a saved version is runnable everywhere within a moment. A name is unique in an
 * organisation and against the built-ins; which stored agent a name means depends on the project asking.
 */
export class AgentDirectory {
  private readonly stored = new Map<string, StoredAgent>();
  private readonly orgOfProject = new Map<string, string>();
  private readonly pinned = new Map<string, CatalogEntry>();
  private readonly builtInPins = new Map<string, PinnedManifest>();

  constructor(
    readonly catalog: Catalog,
    private readonly agents: AgentsRepository,
    private readonly access: Pick<Access, 'orgIdOfProject' | 'visibleProjectIds' | 'requireProjectRole'>,
  ) {
    for (const manifest of [...catalog.list('agent'), ...catalog.list('command')]) {
      const entry = catalog.get(manifest.name)!;
      this.builtInPins.set(manifest.name, pinOf(entry.manifest, entry.layout));
    }
  }

  /** Records the built-ins' manifests (a run started on them resumes on them after an upgrade) and reads the stored. */
  async load(): Promise<void> {
    await this.agents.recordManifests([...this.builtInPins.values()]);
    await this.reload();
  }

  /** Reads every stored agent again: at start, and after the listener's connection was lost. */
  async reload(): Promise<void> {
    const all = await this.agents.all();
    this.stored.clear();
    for (const agent of all) this.stored.set(agent.id, agent);
  }

  /** Another process (or this one) changed a stored agent. */
  async changed(agentId: string): Promise<void> {
    try {
      const agent = await this.agents.one(agentId);
      if (agent) this.stored.set(agentId, agent);
      else this.stored.delete(agentId);
    } catch (error) {
      log.warn(`reading stored agent ${agentId} failed (read again at the next change): ${(error as Error).message}`);
    }
  }

  /**
   * The stored agents of that name as the database has them now, and kept so: a run or a read by name never waits for
   * another process's announcement, so an agent saved through one process behind a load balancer runs at once, at the
   * version just saved, through any other (one indexed read, only for names that are not built-ins).
   */
  private async storedNamed(name: string): Promise<StoredAgent[]> {
    const fresh = await this.agents.named(name);
    for (const [id, agent] of this.stored) if (agent.name === name) this.stored.delete(id);
    for (const agent of fresh) this.stored.set(agent.id, agent);
    return fresh;
  }

  storedById(agentId: string): ResolvedAgent | undefined {
    const agent = this.stored.get(agentId);
    return agent && resolvedOf(agent);
  }

  builtIn(name: string): ResolvedAgent | undefined {
    const entry = this.catalog.get(name);
    const pin = this.builtInPins.get(name);
    return entry && pin && { entry, hash: pin.hash, version: builtInVersion(pin.hash) };
  }

  private async orgOf(projectId: string): Promise<string> {
    let orgId = this.orgOfProject.get(projectId);
    if (!orgId) {
      orgId = await this.access.orgIdOfProject(projectId);
      this.orgOfProject.set(projectId, orgId);
    }
    return orgId;
  }

  /** Whether a project's runs may use the stored agent: its own, or one shared with its organisation. */
  private async offeredTo(agent: StoredAgent, projectId: string): Promise<boolean> {
    return agent.projectId === projectId || (agent.shared && agent.orgId === (await this.orgOf(projectId)));
  }

  /**
   * What `name` means for a run in the project: a built-in, or the stored agent its organisation has under that
   * name, if the project may use it. Only a name some organisation stores costs a look-up of the project's.
   */
  async forProject(projectId: string, name: string): Promise<ResolvedAgent | undefined> {
    const builtIn = this.builtIn(name);
    if (builtIn) return builtIn;
    for (const agent of await this.storedNamed(name)) {
      if (await this.offeredTo(agent, projectId)) return resolvedOf(agent);
    }
    return undefined;
  }

  /** The stored agents the caller may read: those of projects she sees, and those shared with their organisations. */
  async visible(principal: Principal, projectId?: string): Promise<StoredAgent[]> {
    if (projectId) {
      // Only a project the caller may read: another tenant's id answers 404, as the project itself would.
      await this.access.requireProjectRole(principal, projectId, 'viewer', `project ${projectId}`);
      const offered: StoredAgent[] = [];
      for (const agent of this.stored.values()) if (await this.offeredTo(agent, projectId)) offered.push(agent);
      return offered;
    }
    const projects = await this.access.visibleProjectIds(principal);
    if (projects === null) return [...this.stored.values()];
    const ids = new Set(projects);
    const orgs = new Set<string>();
    for (const project of projects) orgs.add(await this.orgOf(project));
    return [...this.stored.values()].filter((a) => ids.has(a.projectId) || (a.shared && orgs.has(a.orgId)));
  }

  /**
   * The agent or command `name` among what the caller may see (within `projectId`'s offer when given): 404 when
   * there is none, 409 when several organisations she belongs to have one.
   */
  async resolve(principal: Principal, name: string, projectId?: string): Promise<ResolvedAgent> {
    const builtIn = this.builtIn(name);
    if (builtIn) return builtIn;
    await this.storedNamed(name);
    const found = (await this.visible(principal, projectId)).filter((a) => a.name === name);
    if (found.length === 0) throw notFound(`no agent or command named "${name}"`);
    if (found.length > 1) {
      throw conflict(
        `${found.length} agents named "${name}" are in projects you can see: name the project (project_id=…)`,
      );
    }
    return resolvedOf(found[0]!);
  }

  /** Every agent or command of a kind the caller may see, built-ins first. */
  async list(principal: Principal, kind: AssetKind, projectId?: string): Promise<ResolvedAgent[]> {
    const builtIns = this.catalog.list(kind).map((m) => this.builtIn(m.name)!);
    const stored = (await this.visible(principal, projectId)).filter((a) => a.kind === kind).map(resolvedOf);
    return [...builtIns, ...stored];
  }

  /**
   * The layout of the agent or command of that name, where only its layout matters (which node a rejection ends at):
   * stored agents run the shipped layouts, so any one of that name answers.
   */
  layoutNamed(name: string): GraphLayout | undefined {
    const builtIn = this.catalog.get(name);
    if (builtIn) return builtIn.layout;
    for (const agent of this.stored.values()) if (agent.name === name) return agent.pinned.layout;
    return undefined;
  }

  /** Whether a name is a built-in's: no stored agent may take it (svc_agents' unique index decides among those). */
  isBuiltInName(name: string): boolean {
    return this.catalog.get(name) !== undefined;
  }

  /**
   * A version of the agent `name` means in the project, as runs show versions (a stored agent's number, a built-in's
   * hash prefix): its current one, or an earlier version of a stored agent; undefined when it has no such version.
   */
  async versionOf(
    projectId: string,
    name: string,
    version: string,
  ): Promise<{ version: string; hash: string } | undefined> {
    const current = await this.forProject(projectId, name);
    if (!current) return undefined;
    if (current.version === version) return { version, hash: current.hash };
    if (!current.stored || !/^[1-9][0-9]{0,8}$/.test(version)) return undefined;
    const hash = await this.agents.versionHash(current.stored.id, Number(version));
    return hash ? { version, hash } : undefined;
  }

  /**
   * The manifest a run is pinned to, whatever has been published since: the built-in as loaded when its hash is the
   * same, else the one recorded under the hash (a stored version, a draft, a shipped file of another release).
   */
  async pinnedEntry(hash: string): Promise<CatalogEntry | undefined> {
    for (const [name, pin] of this.builtInPins) if (pin.hash === hash) return this.catalog.get(name);
    const cached = this.pinned.get(hash);
    if (cached) return cached;
    const found = await this.agents.manifest(hash);
    if (!found) return undefined;
    const entry = { manifest: found.manifest, layout: found.layout };
    if (this.pinned.size >= PINNED_CACHE) this.pinned.delete(this.pinned.keys().next().value!);
    this.pinned.set(hash, entry);
    return entry;
  }
}

function resolvedOf(agent: StoredAgent): ResolvedAgent {
  return {
    entry: { manifest: agent.pinned.manifest, layout: agent.pinned.layout },
    hash: agent.pinned.hash,
    version: String(agent.version),
    stored: agent,
  };
}
