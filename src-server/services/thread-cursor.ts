import { badRequest } from '../contracts/errors';
import type { ThreadKey } from '../db/threads.repository';

/**
 * Where a listing of GET /threads stands. A listing remembers when it began (`since`, the database's clock at its
 * first page): first the threads updated until then, most recent first (`older`); then those updated since, least
 * recently updated first (`newer`), so that a thread that moves while a script pages (a run starts in it) is still
 * returned, after the others, instead of jumping behind the cursor.
 */
export interface ThreadCursor {
  phase: 'older' | 'newer';
  since: string;
  /** The last thread returned; null at the start of the newer ones. */
  after: ThreadKey | null;
}

export function encodeCursor(cursor: ThreadCursor): string {
  const { phase, since, after } = cursor;
  return Buffer.from(JSON.stringify([phase, since, after?.at ?? null, after?.id ?? null])).toString('base64url');
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MICROSECOND_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

/**
 * A time as the repository writes it, to the microsecond, in years 1 to 9999: the millisecond part must survive
 * JavaScript's round trip (no 30 February, no year 0, which JavaScript takes and PostgreSQL refuses).
 */
function isTime(value: unknown): value is string {
  if (typeof value !== 'string' || !MICROSECOND_TIME.test(value)) return false;
  const millis = `${value.slice(0, 23)}Z`;
  const time = new Date(millis);
  return !Number.isNaN(time.getTime()) && time.toISOString() === millis && time.getUTCFullYear() >= 1;
}

/** Exactly what encodeCursor writes; anything else is the client's mistake: 400. */
export function decodeCursor(cursor: string): ThreadCursor {
  let parts: unknown;
  try {
    parts = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw badRequest('invalid cursor');
  }
  if (!Array.isArray(parts) || parts.length !== 4) throw badRequest('invalid cursor');
  const [phase, since, at, id] = parts as unknown[];
  if ((phase !== 'older' && phase !== 'newer') || !isTime(since)) throw badRequest('invalid cursor');
  if (phase === 'newer' && at === null && id === null) return { phase, since, after: null };
  if (!isTime(at) || typeof id !== 'string' || !UUID.test(id)) throw badRequest('invalid cursor');
  return { phase, since, after: { at, id } };
}
