import { z } from 'zod';

export const ErrorBodySchema = z
  .object({
    error: z.object({
      code: z.string().meta({ description: 'stable machine-readable code, e.g. not_found' }),
      message: z.string().meta({ description: 'what went wrong, for people' }),
      details: z.unknown().optional(),
    }),
  })
  .meta({ id: 'Error' });

export type ErrorBody = z.infer<typeof ErrorBodySchema>;

export const UuidSchema = z.uuid({ message: 'must be a UUID' });

/** Bodies of approve, reject, cancel and queue reset: each may carry a `reason`. */
export const ReasonBodySchema = z
  .object({ reason: z.string().max(2000).optional() })
  .default({})
  .meta({ id: 'ReasonBody' });
