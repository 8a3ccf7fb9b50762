import type { Migration } from './migration';

/**
 * Stored agents found by name alone: every run of a stored agent reads its current version by name (the process that
 * serves the run may not have heard of a version saved through another one a moment ago), across organisations.
 */
export const agentsByName: Migration = {
  name: '0005_agents_by_name',
  // An index: the release before neither needs nor minds it.
  compatible: true,
  async up(client) {
    await client.query(`CREATE INDEX IF NOT EXISTS svc_agents_by_name ON svc_agents (name) WHERE deleted_at IS NULL`);
  },
};
