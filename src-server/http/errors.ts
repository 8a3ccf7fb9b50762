import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import type { ErrorCode } from '../contracts/common';
import { DATABASE_UNAVAILABLE, errorBody, errorMessage, ServiceError } from '../contracts/errors';
import { getLogger } from '../log';
import { isDatabaseUnavailable } from '../storage/database-unavailable';

const log = getLogger('svc.api');

/** Errors raised by body-parser carry a `type` and a 4xx status. */
const parserErrors: Record<string, { code: ErrorCode; message: (e: { limit?: number }) => string }> = {
  'entity.parse.failed': { code: 'malformed_json', message: () => 'request body is not valid JSON' },
  'entity.too.large': { code: 'payload_too_large', message: (e) => `request body is larger than ${e.limit} bytes` },
  'encoding.unsupported': { code: 'unsupported_encoding', message: () => 'unsupported content encoding' },
  'encoding.failed': {
    code: 'malformed_encoding',
    message: () => 'request body does not decode as its Content-Encoding says',
  },
  'charset.unsupported': { code: 'unsupported_charset', message: () => 'unsupported charset, use utf-8' },
  'request.aborted': { code: 'request_aborted', message: () => 'request aborted by the client' },
};

/**
 * express.json(), with a `type` on the one failure body-parser leaves without one: the decompression stream's own
 * error, when the body does not decode as its Content-Encoding says (a gzip header on plain JSON).
 */
export function jsonBodyParser(limit: string): RequestHandler {
  const parse = express.json({ limit });
  return (req, res, next) =>
    parse(req, res, (error?: unknown) => {
      if (error instanceof Error && !('type' in error)) Object.assign(error, { type: 'encoding.failed' });
      next(error);
    });
}

export const notFoundHandler: RequestHandler = (req, res) => {
  log.info(`404 ${req.method} ${req.path}`);
  res.status(404).json(errorBody('not_found', `no route for ${req.method} ${req.path}`));
};

export const errorHandler: ErrorRequestHandler = (error, req, res, _next) => {
  if (res.headersSent) {
    res.end();
    return;
  }
  if (error instanceof ServiceError) {
    if (error.status === 404) log.info(`404 ${req.method} ${req.path}: ${error.message}`);
    if (error.retryAfterS !== undefined) res.set('Retry-After', String(Math.max(1, Math.ceil(error.retryAfterS))));
    res.status(error.status).json(errorBody(error.code, error.message, error.details));
    return;
  }
  const parser = typeof error?.type === 'string' ? parserErrors[error.type] : undefined;
  if (parser && typeof error.status === 'number' && error.status < 500) {
    res.status(error.status).json(errorBody(parser.code, parser.message(error)));
    return;
  }
  if (isDatabaseUnavailable(error)) {
    // Not the request's fault nor a bug: the database is down or restarting. A client may try again shortly.
    log.warn(`503 ${req.method} ${req.path}: the database is unreachable (${errorMessage(error)})`);
    res
      .status(DATABASE_UNAVAILABLE.status)
      .set('Retry-After', String(DATABASE_UNAVAILABLE.retryAfterS))
      .json(errorBody(DATABASE_UNAVAILABLE.code, DATABASE_UNAVAILABLE.message));
    return;
  }
  log.error(`unhandled error on ${req.method} ${req.path}`, error);
  res.status(500).json(errorBody('internal_error', 'internal server error'));
};
