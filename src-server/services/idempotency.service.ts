import {
  IDEMPOTENCY_KEY_TTL_HOURS,
  type IdempotencyClaim,
  type IdempotencyKeysRepository,
} from '../db/idempotency-keys.repository';

export { IDEMPOTENCY_KEY_TTL_HOURS, type IdempotencyClaim };

/**
 * The answers to Idempotency-Keys (docs/http-api.md): a caller's key claimed for one request, its first answer kept for
 * the retries, the claim of a request that failed released. http/idempotency.ts (`answerOnce()`) holds the HTTP side,
 * what makes two requests the same and the 409 and 422; main.ts prunes the old keys through the repository.
 */
export function idempotencyService(deps: { keys: IdempotencyKeysRepository }) {
  const { keys } = deps;
  return {
    claim: (caller: string, key: string, fingerprint: string): Promise<IdempotencyClaim> =>
      keys.claim(caller, key, fingerprint),

    /** The first answer, kept for the retries. */
    answer: (caller: string, key: string, status: number, body: unknown): Promise<void> =>
      keys.answer(caller, key, status, body),

    /** The request failed: nothing is kept, so a retry runs it again. */
    release: (caller: string, key: string): Promise<void> => keys.release(caller, key),
  };
}

export type IdempotencyService = ReturnType<typeof idempotencyService>;
