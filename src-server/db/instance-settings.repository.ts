import type { Pool } from './pool';

/** Settings of the instance changed from the studio (svc_instance_settings), over the environment's defaults. */
export function instanceSettingsRepository(pool: Pool) {
  return {
    async get(key: string): Promise<string | undefined> {
      const { rows } = await pool.query<{ value: string }>('SELECT value FROM svc_instance_settings WHERE key = $1', [
        key,
      ]);
      return rows[0]?.value;
    },

    async set(key: string, value: string, by: string): Promise<void> {
      await pool.query(
        `INSERT INTO svc_instance_settings (key, value, updated_by) VALUES ($1, $2, $3)
         ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_by = EXCLUDED.updated_by, updated_at = now()`,
        [key, value, by],
      );
    },
  };
}

export type InstanceSettingsRepository = ReturnType<typeof instanceSettingsRepository>;
