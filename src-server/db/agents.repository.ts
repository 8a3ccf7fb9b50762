import type { AssetKind, GraphLayout, Manifest } from '../contracts/assets';
import type { AgentVersion, AgentVersionDetail } from '../contracts/agents';
import { withTransaction, type Pool } from './pool';

/** A compiled manifest and its layout, as a run is pinned to it (svc_agent_manifests). */
export interface PinnedManifest {
  hash: string;
  manifest: Manifest;
  layout: GraphLayout;
}

/** A stored agent as every process keeps it in memory: its row and its current version's manifest. */
export interface StoredAgent {
  id: string;
  orgId: string;
  projectId: string;
  name: string;
  kind: AssetKind;
  shared: boolean;
  version: number;
  source: string;
  pinned: PinnedManifest;
  updatedAt: string;
  updatedBy: string | null;
}

export interface NewVersion {
  source: string;
  pinned: PinnedManifest;
  note: string;
  createdBy: string;
}

interface AgentRow {
  id: string;
  org_id: string;
  project_id: string;
  name: string;
  kind: AssetKind;
  shared: boolean;
  current_version: number;
  source: string;
  hash: string;
  manifest: Manifest;
  layout: GraphLayout;
  updated_at: Date;
  updated_by: string | null;
}

const SELECT_AGENT = `
  SELECT a.id, a.org_id, a.project_id, a.name, a.kind, a.shared, a.current_version, v.source, m.hash, m.manifest,
         m.layout, a.updated_at, COALESCE(u.name, u.email) AS updated_by
    FROM svc_agents a
    JOIN svc_agent_versions v ON v.agent_id = a.id AND v.version = a.current_version
    JOIN svc_agent_manifests m ON m.hash = v.manifest_hash
    LEFT JOIN svc_users u ON u.id = v.created_by
   WHERE a.deleted_at IS NULL`;

const toAgent = (row: AgentRow): StoredAgent => ({
  id: row.id,
  orgId: row.org_id,
  projectId: row.project_id,
  name: row.name,
  kind: row.kind,
  shared: row.shared,
  version: row.current_version,
  source: row.source,
  pinned: { hash: row.hash, manifest: row.manifest, layout: row.layout },
  updatedAt: row.updated_at.toISOString(),
  updatedBy: row.updated_by,
});

interface VersionRow {
  version: number;
  note: string;
  created_by: string | null;
  created_at: Date;
  current: boolean;
  source: string;
}

const toVersion = (row: VersionRow): AgentVersion => ({
  version: row.version,
  note: row.note,
  created_by: row.created_by,
  created_at: row.created_at.toISOString(),
  current: row.current,
});

/** A unique index's refusal: the name is taken in the organisation. */
export const isNameTaken = (error: unknown) =>
  (error as { code?: string }).code === '23505' && (error as { constraint?: string }).constraint === 'svc_agents_name';

/** Stored agents, their versions, and the manifests runs are pinned to. */
export function agentsRepository(pool: Pool) {
  const recordManifest = (client: Pick<Pool, 'query'>, pinned: PinnedManifest) =>
    client.query(
      `INSERT INTO svc_agent_manifests (hash, name, manifest, layout) VALUES ($1, $2, $3, $4)
       ON CONFLICT (hash) DO NOTHING`,
      [pinned.hash, pinned.manifest.name, JSON.stringify(pinned.manifest), JSON.stringify(pinned.layout)],
    );

  return {
    /** Records manifests a run may be pinned to (the shipped ones at start, a draft before its try). */
    async recordManifests(pinned: readonly PinnedManifest[]): Promise<void> {
      for (const one of pinned) await recordManifest(pool, one);
    },

    async manifest(hash: string): Promise<PinnedManifest | undefined> {
      const { rows } = await pool.query<PinnedManifest>(
        'SELECT hash, manifest, layout FROM svc_agent_manifests WHERE hash = $1',
        [hash],
      );
      return rows[0];
    },

    /** Every stored agent that is not deleted, at its current version. */
    async all(): Promise<StoredAgent[]> {
      const { rows } = await pool.query<AgentRow>(`${SELECT_AGENT} ORDER BY a.name`);
      return rows.map(toAgent);
    },

    /** One agent at its current version; undefined when it is deleted or never was. */
    async one(id: string): Promise<StoredAgent | undefined> {
      const { rows } = await pool.query<AgentRow>(`${SELECT_AGENT} AND a.id = $1`, [id]);
      return rows[0] && toAgent(rows[0]);
    },

    /** The agents of that name, in every organisation, at their current versions. */
    async named(name: string): Promise<StoredAgent[]> {
      const { rows } = await pool.query<AgentRow>(`${SELECT_AGENT} AND a.name = $1`, [name]);
      return rows.map(toAgent);
    },

    /** A new agent at version 1; throws a unique violation (isNameTaken) when its organisation has the name. */
    async create(agent: { id: string; orgId: string; projectId: string; kind: AssetKind }, first: NewVersion) {
      await withTransaction(pool, async (client) => {
        await recordManifest(client, first.pinned);
        await client.query(
          `INSERT INTO svc_agents (id, org_id, project_id, name, kind, current_version, created_by)
           VALUES ($1, $2, $3, $4, $5, 1, $6)`,
          [agent.id, agent.orgId, agent.projectId, first.pinned.manifest.name, agent.kind, first.createdBy],
        );
        await client.query(
          `INSERT INTO svc_agent_versions (agent_id, version, source, manifest_hash, note, created_by)
           VALUES ($1, 1, $2, $3, $4, $5)`,
          [agent.id, first.source, first.pinned.hash, first.note, first.createdBy],
        );
      });
    },

    /** The agent's next version, made current; undefined when the agent was deleted meanwhile. */
    async addVersion(agentId: string, next: NewVersion): Promise<number | undefined> {
      return withTransaction(pool, async (client) => {
        await recordManifest(client, next.pinned);
        // The row's lock orders concurrent saves: each gets its own number.
        const { rows } = await client.query<{ current_version: number }>(
          `UPDATE svc_agents SET current_version = current_version + 1, kind = $2, updated_at = now()
            WHERE id = $1 AND deleted_at IS NULL RETURNING current_version`,
          [agentId, next.pinned.manifest.kind],
        );
        const version = rows[0]?.current_version;
        if (version === undefined) return undefined;
        await client.query(
          `INSERT INTO svc_agent_versions (agent_id, version, source, manifest_hash, note, created_by)
           VALUES ($1, $2, $3, $4, $5, $6)`,
          [agentId, version, next.source, next.pinned.hash, next.note, next.createdBy],
        );
        return version;
      });
    },

    async versions(agentId: string): Promise<AgentVersion[]> {
      const { rows } = await pool.query<VersionRow>(
        `SELECT v.version, v.note, COALESCE(u.name, u.email) AS created_by, v.created_at,
                v.version = a.current_version AS current, v.source
           FROM svc_agent_versions v JOIN svc_agents a ON a.id = v.agent_id
           LEFT JOIN svc_users u ON u.id = v.created_by
          WHERE v.agent_id = $1 ORDER BY v.version DESC`,
        [agentId],
      );
      return rows.map(toVersion);
    },

    /** The manifest a stored agent's version runs, by its hash; undefined when it has no such version. */
    async versionHash(agentId: string, version: number): Promise<string | undefined> {
      const { rows } = await pool.query<{ manifest_hash: string }>(
        `SELECT manifest_hash FROM svc_agent_versions WHERE agent_id = $1 AND version = $2`,
        [agentId, version],
      );
      return rows[0]?.manifest_hash;
    },

    async version(agentId: string, version: number): Promise<AgentVersionDetail | undefined> {
      const { rows } = await pool.query<VersionRow>(
        `SELECT v.version, v.note, COALESCE(u.name, u.email) AS created_by, v.created_at,
                v.version = a.current_version AS current, v.source
           FROM svc_agent_versions v JOIN svc_agents a ON a.id = v.agent_id
           LEFT JOIN svc_users u ON u.id = v.created_by
          WHERE v.agent_id = $1 AND v.version = $2`,
        [agentId, version],
      );
      const row = rows[0];
      return row && { ...toVersion(row), source: row.source };
    },

    async setShared(agentId: string, shared: boolean): Promise<void> {
      await pool.query('UPDATE svc_agents SET shared = $2, updated_at = now() WHERE id = $1 AND deleted_at IS NULL', [
        agentId,
        shared,
      ]);
    },

    /**
     * Marks the agent deleted (its name is free again; its versions stay, for the runs that ran them) and pauses the
     * schedules that would run it, with `reason`. Answers how many schedules it paused.
     */
    async remove(agentId: string, by: string, reason: string): Promise<number> {
      return withTransaction(pool, async (client) => {
        const { rows } = await client.query<{ name: string; project_id: string; org_id: string; shared: boolean }>(
          `UPDATE svc_agents SET deleted_at = now(), deleted_by = $2 WHERE id = $1 AND deleted_at IS NULL
           RETURNING name, project_id, org_id, shared`,
          [agentId, by],
        );
        const agent = rows[0];
        if (!agent) return 0;
        const paused = await client.query(
          `UPDATE svc_schedules s SET paused_at = COALESCE(paused_at, now()),
                  paused_reason = COALESCE(paused_reason, $2), next_fire_at = NULL, updated_at = now()
            WHERE s.agent = $1 AND s.paused_at IS NULL
              AND (s.project_id = $3 OR ($5 AND s.project_id IN (
                     SELECT p.id FROM svc_projects p JOIN svc_teams t ON t.id = p.team_id WHERE t.org_id = $4)))`,
          [agent.name, reason, agent.project_id, agent.org_id, agent.shared],
        );
        return paused.rowCount ?? 0;
      });
    },
  };
}

export type AgentsRepository = ReturnType<typeof agentsRepository>;
