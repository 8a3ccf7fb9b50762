import { z } from 'zod';
import { UuidSchema } from '../contracts/common';
import {
  CreateScheduleSchema,
  NextTimesQuerySchema,
  NextTimesSchema,
  ScheduleFireSchema,
  ScheduleSchema,
  UpdateScheduleSchema,
} from '../contracts/schedules';
import type { Api } from './api';
import type { AppDeps } from './deps';

const IdParams = z.object({ id: UuidSchema });
const MANAGE = "needs to be the schedule's maker (a member of its project) or an owner of the project (forbidden)";

/** Schedules under their project, and each by its id (docs/schedules.md). */
export function scheduleRoutes(api: Api, { schedules }: AppDeps): void {
  const tag = 'schedules';
  api.route({
    method: 'get',
    path: '/projects/{id}/schedules',
    operationId: 'listSchedules',
    tag,
    summary: "A project's schedules, oldest first, each with its next fire times and its last fire",
    params: IdParams,
    responses: { 200: { description: 'the schedules', schema: z.array(ScheduleSchema) } },
    handler: ({ params, ctx }) => schedules.list(ctx.principal, params.id),
  });

  api.route({
    method: 'post',
    path: '/projects/{id}/schedules',
    operationId: 'createSchedule',
    tag,
    summary: 'Schedule an agent or command: it runs at each occurrence of the cron, in the time zone, as the caller',
    params: IdParams,
    body: CreateScheduleSchema,
    errors: {
      400:
        'invalid request (invalid_request): a field fails its schema, a cron or time zone that does not parse, six ' +
        "fields without SCHEDULES_ALLOW_SECONDS, a cron whose fires come closer than the caller's role allows " +
        '(SCHEDULES_MEMBER_MIN_INTERVAL_S, SCHEDULES_OWNER_MIN_INTERVAL_S), an agent that is not loaded, a thread of ' +
        'another project or agent, a model whose provider is not configured, or a project path the caller may not name',
      403: 'needs the member role on the project (forbidden)',
      409:
        'the caller runs SCHEDULES_MAX_PER_USER schedules already, or the project has SCHEDULES_MAX_PER_PROJECT: ' +
        'the message says which (conflict)',
    },
    responses: { 201: { description: 'created', schema: ScheduleSchema } },
    handler: ({ params, body, ctx }) => schedules.create(ctx.principal, params.id, body),
  });

  api.route({
    method: 'get',
    path: '/schedules/next-times',
    operationId: 'previewScheduleTimes',
    tag,
    summary: 'The next times a cron fires in a time zone, without saving anything: for a form to show',
    query: NextTimesQuerySchema,
    responses: { 200: { description: 'the next times', schema: NextTimesSchema } },
    handler: ({ query }) => schedules.nextTimes(query),
  });

  api.route({
    method: 'get',
    path: '/schedules/{id}',
    operationId: 'getSchedule',
    tag,
    summary: 'One schedule',
    params: IdParams,
    responses: { 200: { description: 'the schedule', schema: ScheduleSchema } },
    handler: ({ params, ctx }) => schedules.get(ctx.principal, params.id),
  });

  api.route({
    method: 'patch',
    path: '/schedules/{id}',
    operationId: 'updateSchedule',
    tag,
    summary: 'Change a schedule (only the fields given); from then on it runs as the person who changed it',
    params: IdParams,
    body: UpdateScheduleSchema,
    errors: {
      400:
        'invalid request (invalid_request): as for createSchedule, with the role of the caller, whom it runs as from ' +
        'then on',
      403: MANAGE,
      409: 'it would run as the caller, who runs SCHEDULES_MAX_PER_USER other schedules already (conflict)',
    },
    responses: { 200: { description: 'the schedule as changed', schema: ScheduleSchema } },
    handler: ({ params, body, ctx }) => schedules.update(ctx.principal, params.id, body),
  });

  api.route({
    method: 'delete',
    path: '/schedules/{id}',
    operationId: 'deleteSchedule',
    tag,
    summary: 'Delete a schedule and its history of fires (the runs it made stay)',
    params: IdParams,
    errors: { 403: MANAGE },
    responses: { 204: { description: 'deleted' } },
    handler: async ({ params, ctx }) => {
      await schedules.remove(ctx.principal, params.id);
    },
  });

  api.route({
    method: 'post',
    path: '/schedules/{id}/pause',
    operationId: 'pauseSchedule',
    tag,
    summary: 'Pause: no occurrence runs while paused, and none is caught up at resume',
    params: IdParams,
    errors: { 403: MANAGE },
    responses: { 200: { description: 'the schedule, paused', schema: ScheduleSchema } },
    handler: ({ params, ctx }) => schedules.pause(ctx.principal, params.id),
  });

  api.route({
    method: 'post',
    path: '/schedules/{id}/resume',
    operationId: 'resumeSchedule',
    tag,
    summary: 'Resume from the next occurrence after now',
    params: IdParams,
    errors: {
      403: MANAGE,
      409: 'the person it runs as may not run it now (role removed, user deleted): edit it or delete it (conflict)',
    },
    responses: { 200: { description: 'the schedule, resumed', schema: ScheduleSchema } },
    handler: ({ params, ctx }) => schedules.resume(ctx.principal, params.id),
  });

  api.route({
    method: 'post',
    path: '/schedules/{id}/run',
    operationId: 'runSchedule',
    tag,
    summary:
      'Run it once now, as the person it runs as, paused or not: the fire is recorded with its outcome (started, ' +
      'refused with why, or paused when that person may no longer run it)',
    params: IdParams,
    errors: { 403: MANAGE },
    responses: { 201: { description: 'the fire', schema: ScheduleFireSchema } },
    handler: ({ params, ctx }) => schedules.runNow(ctx.principal, params.id),
  });

  api.route({
    method: 'get',
    path: '/schedules/{id}/fires',
    operationId: 'listScheduleFires',
    tag,
    summary: "A schedule's fires, newest first: the runs it started, and the fires refused, skipped or paused, and why",
    params: IdParams,
    query: z.object({ limit: z.coerce.number().int().min(1).max(500).default(50) }),
    responses: { 200: { description: 'the fires', schema: z.array(ScheduleFireSchema) } },
    handler: ({ params, query, ctx }) => schedules.fires(ctx.principal, params.id, query.limit),
  });
}
