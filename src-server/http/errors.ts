import type { ErrorRequestHandler, RequestHandler } from 'express';
import { getLogger } from '../log';

const log = getLogger('svc.api');

/**
 * Every failure a client can see. Services throw these; the one error handler below turns them into
 * `{"error": {"code", "message"}}` with the status. Anything else becomes a 500 without details.
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export const badRequest = (message: string, details?: unknown) => new HttpError(400, 'invalid_request', message, details);
export const unauthorized = (message = 'authentication required: send Authorization: Bearer <token>') =>
  new HttpError(401, 'unauthorized', message);
export const forbidden = (message = 'your role does not allow this') => new HttpError(403, 'forbidden', message);
export const notFound = (message: string) => new HttpError(404, 'not_found', message);
export const conflict = (message: string) => new HttpError(409, 'conflict', message);
export const unsupportedMediaType = (message: string) => new HttpError(415, 'unsupported_media_type', message);
export const serviceUnavailable = (message: string) => new HttpError(503, 'unavailable', message);

export interface ErrorBody {
  error: { code: string; message: string; details?: unknown };
}

export function errorBody(code: string, message: string, details?: unknown): ErrorBody {
  return { error: details === undefined ? { code, message } : { code, message, details } };
}

/** Errors raised by body-parser carry a `type` and a 4xx status. */
const parserErrors: Record<string, { code: string; message: (e: { limit?: number }) => string }> = {
  'entity.parse.failed': { code: 'malformed_json', message: () => 'request body is not valid JSON' },
  'entity.too.large': { code: 'payload_too_large', message: (e) => `request body is larger than ${e.limit} bytes` },
  'encoding.unsupported': { code: 'unsupported_encoding', message: () => 'unsupported content encoding' },
  'charset.unsupported': { code: 'unsupported_charset', message: () => 'unsupported charset, use utf-8' },
  'request.aborted': { code: 'request_aborted', message: () => 'request aborted by the client' },
};

export const notFoundHandler: RequestHandler = (req, res) => {
  log.info(`404 ${req.method} ${req.path}`);
  res.status(404).json(errorBody('not_found', `no route for ${req.method} ${req.path}`));
};

export const errorHandler: ErrorRequestHandler = (error, req, res, _next) => {
  if (res.headersSent) {
    res.end();
    return;
  }
  if (error instanceof HttpError) {
    if (error.status === 404) log.info(`404 ${req.method} ${req.path}: ${error.message}`);
    res.status(error.status).json(errorBody(error.code, error.message, error.details));
    return;
  }
  const parser = typeof error?.type === 'string' ? parserErrors[error.type] : undefined;
  if (parser && typeof error.status === 'number' && error.status < 500) {
    res.status(error.status).json(errorBody(parser.code, parser.message(error)));
    return;
  }
  log.error(`unhandled error on ${req.method} ${req.path}`, error);
  res.status(500).json(errorBody('internal_error', 'internal server error'));
};
