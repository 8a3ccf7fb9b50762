import { describe, expect, it } from 'vitest';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { nodeConfigsRepository } from '../../src-server/db/node-configs.repository';
import { useMigratedDatabase } from '../helpers/database';

/**
 * The statements of every run are named prepared statements (db/prepared.ts): PostgreSQL parses one once per
 * connection rather than on each call. A schema changed under a prepared statement, as a newer release's migration
 * does while older processes still run, is planned again by PostgreSQL, and the statement goes on answering.
 */
describe('statements prepared once per connection', () => {
  // One connection, so that the session's prepared statements are the ones the reads left.
  const database = useMigratedDatabase(1);

  it('are parsed once, answer each call with its own values, and survive a migration of their table', async () => {
    const configs = nodeConfigsRepository(database.pool);
    const project = { type: 'project' as const, id: DEFAULT_PROJECT_ID };
    const save = (agent: string, text: string) =>
      configs.save(project, agent, 'analysis', {
        instructions_override: text,
        classification_labels: null,
        routing_overrides: [],
        notes: null,
      });
    await save('explain-error', 'Answer in one line.');
    await save('summary', 'Answer in two lines.');

    const first = await configs.effective(DEFAULT_PROJECT_ID, 'explain-error');
    const second = await configs.effective(DEFAULT_PROJECT_ID, 'summary');
    expect(first.get('analysis')?.config.instructions_override).toBe('Answer in one line.');
    expect(second.get('analysis')?.config.instructions_override).toBe('Answer in two lines.');

    const { rows } = await database.pool.query<{ name: string }>(
      `SELECT name FROM pg_prepared_statements WHERE statement LIKE '%FROM svc_project_node_configs%'`,
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]!.name).toMatch(/^svc_\d+$/);

    await database.pool.query(`ALTER TABLE svc_project_node_configs ADD COLUMN added_later text`);
    await save('explain-error', 'Answer in three lines.');
    const after = await configs.effective(DEFAULT_PROJECT_ID, 'explain-error');
    expect(after.get('analysis')?.config.instructions_override).toBe('Answer in three lines.');
  });
});
