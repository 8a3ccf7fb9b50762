import type { ErrorBody, ErrorCode } from './common';

/**
 * Every failure a client can see. Services (and the layers under them) throw these; `http/` only maps
 * them to `{"error": {"code", "message"}}` with the status. Anything else is answered as a 500 without
 * details. Lives in `contracts/` so that every layer can throw it without importing the HTTP layer.
 */
export class ServiceError extends Error {
  /** Seconds after which the client may try again (a 429 or a 503), sent as Retry-After. */
  retryAfterS?: number;

  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'ServiceError';
  }
}

export const badRequest = (message: string, details?: unknown) =>
  new ServiceError(400, 'invalid_request', message, details);
export const unauthorized = (message = 'authentication required: send Authorization: Bearer <token>') =>
  new ServiceError(401, 'unauthorized', message);
export const forbidden = (message = 'your role does not allow this', details?: unknown) =>
  new ServiceError(403, 'forbidden', message, details);
export const notFound = (message: string) => new ServiceError(404, 'not_found', message);
export const conflict = (message: string) => new ServiceError(409, 'conflict', message);
export const unsupportedMediaType = (message: string) => new ServiceError(415, 'unsupported_media_type', message);
export const serviceUnavailable = (message: string) => new ServiceError(503, 'unavailable', message);
export const tooManyRequests = (message: string, retryAfterS: number) =>
  Object.assign(new ServiceError(429, 'too_many_requests', message), { retryAfterS });

/** The answer while the database cannot be reached (down, restarting): 503, whatever the endpoint. */
export const DATABASE_UNAVAILABLE = {
  status: 503,
  code: 'database_unavailable',
  message: 'the database is unreachable; the server keeps trying to reconnect: try again in a few seconds',
  retryAfterS: 5,
} as const;

export function errorBody(code: ErrorCode, message: string, details?: unknown): ErrorBody {
  return { error: details === undefined ? { code, message } : { code, message, details } };
}

/** The message of anything thrown: an Error's own (the first one of an AggregateError), else its string form. */
export function errorMessage(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length) return errorMessage(error.errors[0]);
  if (error instanceof Error) return error.message || error.name;
  return String(error);
}

/**
 * A run's `error_detail`, `<ExceptionClass>: <message>`, as a failed run stores and shows it
 * (docs/run-lifecycle.md#timeouts-and-orphans).
 */
export function errorDetail(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return `Error: ${String(error)}`;
}
