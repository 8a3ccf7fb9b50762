import { createHash } from 'node:crypto';
import type { Request } from 'express';
import { z } from 'zod';
import { conflict, errorMessage, ServiceError } from '../contracts/errors';
import { getLogger } from '../log';
import { IDEMPOTENCY_KEY_TTL_HOURS, type IdempotencyService } from '../services/idempotency.service';

const log = getLogger('svc.api');

export const IDEMPOTENCY_HEADER = 'Idempotency-Key';
/** Sent with an answer that repeats the first answer to the same key, so a script can tell. */
export const REPLAYED_HEADER = 'Idempotent-Replayed';

/** The header as the document declares it and the route checks it. */
export const IdempotencyKeyHeader = z.object({
  [IDEMPOTENCY_HEADER]: z
    .string()
    .min(1)
    .max(255)
    .regex(/^[\x21-\x7e]+$/, 'must be visible ASCII characters (a UUID is a good key)')
    .optional()
    .meta({
      description:
        `A key the client makes for one request (a UUID), to send the same request again safely: for ${IDEMPOTENCY_KEY_TTL_HOURS} ` +
        "hours, a request with the same key and the same path and body answers the first request's answer again " +
        `(with ${REPLAYED_HEADER}: true) instead of acting twice; with another path or body it answers 422; while ` +
        'the first is still being answered, 409. Keys are per caller. A request that failed keeps nothing: its retry ' +
        'runs again.',
    }),
});

const otherRequest = (key: string) =>
  new ServiceError(
    422,
    'idempotency_key_reused',
    `${IDEMPOTENCY_HEADER} "${key}" was used for another request (another path or body) in the last ${IDEMPOTENCY_KEY_TTL_HOURS} hours: make a new key for a new request`,
  );

const inFlight = (key: string) =>
  Object.assign(
    conflict(`the first request with ${IDEMPOTENCY_HEADER} "${key}" is still being answered: try again in a moment`),
    { retryAfterS: 1 },
  );

/** JSON with its keys sorted: the same body however its keys were ordered. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * What makes two requests the same: method, path and the body as validated (a left-out body and `{}` are the same
 * request). The Accept header is not part of it: a retry may ask for the stream or the JSON of the same run.
 */
function fingerprint(req: Request, body: unknown): string {
  return createHash('sha256')
    .update(`${req.method} ${req.originalUrl}\n${canonical(body ?? {})}`)
    .digest('hex');
}

/**
 * Runs `act` once per caller and key: the first request with a key runs it and keeps its answer; a retry (same key,
 * same request) gets that answer back; a key reused for another request is 422, and one whose first request has not
 * answered yet 409. A request that fails keeps nothing. `act` returns the status and body to keep.
 */
export async function answerOnce(
  store: IdempotencyService,
  caller: string,
  key: string,
  req: Request,
  body: unknown,
  act: () => Promise<{ status: number; body: unknown }>,
): Promise<{ status: number; body: unknown; replayed: boolean }> {
  const claim = await store.claim(caller, key, fingerprint(req, body));
  if (claim.state === 'other_request') throw otherRequest(key);
  if (claim.state === 'in_flight') throw inFlight(key);
  if (claim.state === 'answered') return { status: claim.status, body: claim.body, replayed: true };
  let answer: { status: number; body: unknown };
  try {
    answer = await act();
  } catch (error) {
    await store.release(caller, key).catch(() => undefined);
    throw error;
  }
  // The act is done: its answer goes to the client even if it cannot be kept (the claim then lapses, see the
  // repository, and a retry would act again).
  await store
    .answer(caller, key, answer.status, answer.body)
    .catch((error) =>
      log.warn(`the answer to ${IDEMPOTENCY_HEADER} "${key}" could not be kept: ${errorMessage(error)}`),
    );
  return { ...answer, replayed: false };
}
