import { z } from 'zod';
import { UuidSchema } from './common';
import { RunStatusSchema } from './runs';

/**
 * What a schedule does with occurrences it missed while no server ran (docs/schedules.md#missed-occurrences): `one`
 * runs once for all of them at the next start, `none` runs none of them.
 */
export const CatchUpSchema = z
  .enum(['one', 'none'])
  .meta({ id: 'CatchUp', description: '`one`: one catch-up run for missed occurrences (the default); `none`: none' });
export type CatchUp = z.infer<typeof CatchUpSchema>;

const cron = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(200)
  .meta({
    description:
      'five fields (minute hour day-of-month month day-of-week), e.g. `0 9 * * 1-5`; a sixth field of seconds in ' +
      'front only when the server runs with SCHEDULES_ALLOW_SECONDS=true (for tests)',
    examples: ['0 9 * * 1-5'],
  });
const timezone = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(100)
  .meta({ description: 'an IANA time zone name; local times follow its daylight saving', examples: ['Europe/Paris'] });
const message = z.string().trim().min(1, 'must not be empty').max(100_000);
const model = z.string().trim().min(1).max(200);
const projectPath = z.string().trim().min(1).max(2000);

export const CreateScheduleSchema = z
  .object({
    agent: z.string().trim().min(1).max(200).meta({ description: 'the agent or command each fire runs' }),
    cron,
    timezone,
    message: message.meta({ description: 'the message of each run' }),
    model: model.optional().meta({ description: "the model of each run; without it, the instance's default then" }),
    project_path: projectPath.optional(),
    thread_id: UuidSchema.optional().meta({
      description: 'continue this thread (of the same project and agent) at each fire; without it, a new thread each',
    }),
    catch_up: CatchUpSchema.default('one'),
  })
  .meta({
    id: 'CreateSchedule',
    examples: [
      {
        agent: 'change-review',
        cron: '0 9 * * 1-5',
        timezone: 'Europe/Paris',
        message: 'Review the changes merged since yesterday',
        catch_up: 'one',
      },
    ],
  });
export type CreateSchedule = z.infer<typeof CreateScheduleSchema>;

/** A change to a schedule: only the fields given change; `null` clears the optional ones. */
export const UpdateScheduleSchema = z
  .object({
    agent: z.string().trim().min(1).max(200).optional(),
    cron: cron.optional(),
    timezone: timezone.optional(),
    message: message.optional(),
    model: model.nullable().optional(),
    project_path: projectPath.nullable().optional(),
    thread_id: UuidSchema.nullable().optional().meta({ description: 'null: a new thread at each fire' }),
    catch_up: CatchUpSchema.optional(),
  })
  .meta({ id: 'UpdateSchedule', examples: [{ cron: '30 8 * * 1-5', message: 'Review the changes merged today' }] });
export type UpdateSchedule = z.infer<typeof UpdateScheduleSchema>;

export const FireKindSchema = z
  .enum(['scheduled', 'catch_up', 'manual'])
  .meta({ id: 'FireKind', description: 'an occurrence on time, the one catch-up for missed ones, or Run now' });

export const FireOutcomeSchema = z.enum(['starting', 'started', 'refused', 'paused', 'skipped']).meta({
  id: 'FireOutcome',
  description:
    '`started`: the run began (`run_id`); `refused`: the run was not admitted (`reason`: the 409 or 429 it got) and ' +
    'the schedule goes on; `paused`: the maker may no longer run it, and the schedule paused (`reason`); ' +
    '`skipped`: occurrences missed while no server ran that the catch-up policy did not run; `starting`: claimed by a ' +
    'process that stopped before it could say how the start went',
});
export type FireOutcome = z.infer<typeof FireOutcomeSchema>;

export const ScheduleFireSchema = z
  .object({
    schedule_id: z.uuid(),
    occurrence: z.string().meta({ description: 'ISO 8601: the time this fire is for (Run now: when it was asked)' }),
    kind: FireKindSchema,
    outcome: FireOutcomeSchema,
    reason: z.string().nullable(),
    run_id: z.uuid().nullable(),
    thread_id: z.uuid().nullable(),
    run_status: RunStatusSchema.nullable().meta({ description: "the run's status now; null without a run" }),
    run_error: z
      .string()
      .nullable()
      .meta({ description: "the run's error_detail when it failed, e.g. a local-runtime queue timeout" }),
    fired_at: z.string(),
    fired_by: z.string().nullable().meta({ description: 'Run now: who asked; null for the scheduler' }),
  })
  .meta({ id: 'ScheduleFire' });
export type ScheduleFire = z.infer<typeof ScheduleFireSchema>;

export const ScheduleSchema = z
  .object({
    id: z.uuid(),
    project_id: z.uuid(),
    agent: z.string(),
    cron: z.string(),
    timezone: z.string(),
    message: z.string(),
    model: z.string().nullable(),
    project_path: z.string().nullable(),
    thread_id: z.uuid().nullable(),
    catch_up: CatchUpSchema,
    run_as: z
      .object({ id: UuidSchema, name: z.string() })
      .meta({ description: 'whose rights each fire runs with: who made the schedule, or last changed it' }),
    paused_at: z.string().nullable(),
    paused_reason: z
      .string()
      .nullable()
      .meta({ description: 'why it is paused: who paused it, or why the scheduler did (the maker lost her role)' }),
    next_fire_at: z.string().nullable().meta({ description: 'ISO 8601; null while paused' }),
    next_fire_times: z
      .array(z.string())
      .meta({ description: 'the next three occurrences (ISO 8601), empty while paused' }),
    last_fire: ScheduleFireSchema.nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Schedule' });
export type Schedule = z.infer<typeof ScheduleSchema>;

export const NextTimesQuerySchema = z.object({
  cron,
  timezone,
  count: z.coerce.number().int().min(1).max(20).default(3),
});

export const NextTimesSchema = z
  .object({
    times: z.array(z.string()).meta({ description: 'ISO 8601 instants, soonest first' }),
    local_times: z
      .array(z.string())
      .meta({ description: 'the same, as wall-clock times in the time zone (`YYYY-MM-DD HH:mm:ss ±HH:MM`)' }),
  })
  .meta({ id: 'NextTimes' });
export type NextTimes = z.infer<typeof NextTimesSchema>;
