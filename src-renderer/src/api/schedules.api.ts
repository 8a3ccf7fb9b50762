import {
  NextTimesSchema,
  ScheduleFireSchema,
  ScheduleSchema,
  type CreateSchedule,
  type UpdateSchedule,
} from '@contracts/schedules';
import { z } from 'zod';
import { api } from './http';

const one = (id: string) => `/schedules/${encodeURIComponent(id)}`;

/** A project's schedules, their changes, and what each fire did (docs/schedules.md). */
export const schedulesApi = {
  list: (projectId: string) =>
    api(`/projects/${encodeURIComponent(projectId)}/schedules`, { schema: z.array(ScheduleSchema) }),
  create: (projectId: string, body: CreateSchedule) =>
    api(`/projects/${encodeURIComponent(projectId)}/schedules`, { method: 'POST', body, schema: ScheduleSchema }),
  update: (id: string, body: UpdateSchedule) => api(one(id), { method: 'PATCH', body, schema: ScheduleSchema }),
  remove: (id: string) => api<void>(one(id), { method: 'DELETE' }),
  pause: (id: string) => api(`${one(id)}/pause`, { method: 'POST', schema: ScheduleSchema }),
  resume: (id: string) => api(`${one(id)}/resume`, { method: 'POST', schema: ScheduleSchema }),
  runNow: (id: string) => api(`${one(id)}/run`, { method: 'POST', schema: ScheduleFireSchema }),
  fires: (id: string) => api(`${one(id)}/fires?limit=50`, { schema: z.array(ScheduleFireSchema) }),
  nextTimes: (cron: string, timezone: string, signal?: AbortSignal) =>
    api(`/schedules/next-times?${new URLSearchParams({ cron, timezone, count: '3' })}`, {
      schema: NextTimesSchema,
      signal,
    }),
};
