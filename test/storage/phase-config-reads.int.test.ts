import { afterAll, describe, expect, it, vi } from 'vitest';
import { nodeConfigsRepository } from '../../src-server/db/node-configs.repository';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { phaseConfigService } from '../../src-server/services/phase-config.service';
import { useMigratedDatabase } from '../helpers/database';

/**
 * Runs of one agent in one project started together (hundreds at once) read the phases' configuration once between
 * them, rather than each queueing its own statement before its first phase; a run started once that read is over
 * reads again, and sees what was saved meanwhile.
 */
describe("the phases' configuration read by runs started together", () => {
  const database = useMigratedDatabase(4);
  afterAll(() => vi.restoreAllMocks());

  it('is one statement for all of them, and read again for the runs after', async () => {
    const configs = nodeConfigsRepository(database.pool);
    const service = phaseConfigService({ agents: {} as never, access: {} as never, configs, audit: {} as never });
    const statements = vi.spyOn(database.pool, 'query');
    const read = await Promise.all(
      Array.from({ length: 50 }, () => service.forRun('explain-error', DEFAULT_PROJECT_ID)),
    );
    expect(statements).toHaveBeenCalledTimes(1);
    expect(read.every((configsOfRun) => configsOfRun.size === 0)).toBe(true);

    await configs.save({ type: 'project', id: DEFAULT_PROJECT_ID }, 'explain-error', 'analysis', {
      instructions_override: 'Answer in one line.',
      classification_labels: null,
      routing_overrides: [],
      notes: null,
    });
    const later = await service.forRun('explain-error', DEFAULT_PROJECT_ID);
    expect(later.get('analysis')?.instructions_override).toBe('Answer in one line.');
  });
});
