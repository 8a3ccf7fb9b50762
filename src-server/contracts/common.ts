import { z } from 'zod';

/**
 * Every `code` an error answer can carry. A new code is added here first (ServiceError takes only these), so the
 * OpenAPI document lists them all; a client should still treat a code it does not know by its HTTP status.
 */
export const ERROR_CODES = [
  'invalid_request',
  'malformed_json',
  'unauthorized',
  'forbidden',
  'forbidden_host',
  'not_found',
  'conflict',
  'payload_too_large',
  'unsupported_media_type',
  'unsupported_encoding',
  'malformed_encoding',
  'unsupported_charset',
  'request_aborted',
  'too_many_requests',
  'login_failed',
  'internal_error',
  'unavailable',
  'database_unavailable',
  'idempotency_key_reused',
  'budget_exceeded',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export const ErrorBodySchema = z
  .object({
    error: z.object({
      code: z.enum(ERROR_CODES).meta({ id: 'ErrorCode', description: 'stable machine-readable code, e.g. not_found' }),
      message: z.string().meta({ description: 'what went wrong, for people' }),
      details: z.unknown().optional(),
    }),
  })
  .meta({ id: 'Error' });

export type ErrorBody = z.infer<typeof ErrorBodySchema>;

/**
 * An id the API takes: any UUID in its 8-4-4-4-12 hexadecimal form, as the document's `format: uuid` says and as
 * PostgreSQL stores it, whatever its version bits. Every id the API hands out is one (the fixed ids of the API-token
 * administrator and of the default scopes included), so every one is accepted wherever an id is expected.
 */
export const UuidSchema = z.guid({ message: 'must be a UUID' });

/** Bodies of approve, reject, cancel and queue reset: each may carry a `reason`. */
export const ReasonBodySchema = z
  .object({ reason: z.string().max(2000).optional() })
  .default({})
  .meta({ id: 'ReasonBody' });
