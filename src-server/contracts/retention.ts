import { z } from 'zod';

/** The longest a project may ask finished threads to be kept for, in days (a hundred years: "forever" is null). */
export const KEEP_DAYS_MAX = 36_500;

const RETENTION_FIELDS = {
  keep_finished_threads_days: z
    .number()
    .int()
    .min(1)
    .max(KEEP_DAYS_MAX)
    .nullable()
    .meta({
      description:
        'Days a finished thread is kept after its last run ended; then the janitor deletes it with its runs, events, ' +
        'decision records and checkpoints. A thread with a run not finished (running, waiting at a gate, or any ' +
        'other status that is not completed, rejected, error or cancelled) is never deleted. null: kept forever.',
      examples: [90],
    }),
  prune_checkpoints: z.boolean().meta({
    description:
      "Whether the checkpoints of a finished thread are pruned (after RETENTION_PRUNE_AFTER_HOURS) to its latest, the ones a run was forked from, and the one before each of those; the thread's history then lists those only.",
    examples: [true],
  }),
};

/** PUT /projects/{project_id}/retention: both settings, as a whole. */
export const RetentionSettingsSchema = z.object(RETENTION_FIELDS).meta({
  id: 'RetentionSettings',
  examples: [{ keep_finished_threads_days: 90, prune_checkpoints: true }],
});
export type RetentionSettings = z.infer<typeof RetentionSettingsSchema>;

/** A project's retention; a project whose owners never chose keeps everything (null, false). */
export const ProjectRetentionSchema = z
  .object({
    project_id: z.uuid(),
    ...RETENTION_FIELDS,
    updated_at: z.string().nullable().meta({ description: 'when an owner last saved it; null: never (the defaults)' }),
  })
  .meta({
    id: 'ProjectRetention',
    examples: [
      {
        project_id: '00000000-0000-4000-8000-000000000003',
        keep_finished_threads_days: 90,
        prune_checkpoints: true,
        updated_at: '2026-11-20T09:31:12.123Z',
      },
    ],
  });
export type ProjectRetention = z.infer<typeof ProjectRetentionSchema>;

/** What retention keeps when a project's owners never chose: everything. */
export const DEFAULT_RETENTION: RetentionSettings = { keep_finished_threads_days: null, prune_checkpoints: false };
