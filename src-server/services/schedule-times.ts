import { Cron } from 'croner';
import { badRequest } from '../contracts/errors';

/**
 * The times of a schedule, computed by croner (docs/schedules.md#daylight-saving). Croner follows Vixie cron across a
 * change of daylight saving time: a fixed-time job (no wildcard or step in its minute and hour, `30 2 * * *`) whose
 * local time is skipped runs once at the first valid time after the gap (03:00), and one whose local time occurs twice
 * runs once, at the first; an interval job (`*\/15 * * * *`) keeps its pace in real time. `no-wildcard` makes lists
 * and ranges (`30 1,13 * * *`) fixed-time too, as in Vixie cron.
 */
export interface ScheduleRules {
  /** SCHEDULES_ALLOW_SECONDS: a sixth field of seconds, for tests; otherwise one minute is the finest grain. */
  allowSeconds: boolean;
}

/** An IANA name: letters first (no bare offsets such as `+01:00`), and one the runtime's time-zone data knows. */
const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/;

/** Where a refused value came from, for the message: `request body` or `query parameters`. */
type Where = 'request body' | 'query parameters';

export function checkTimezone(timezone: string, field = 'timezone', where: Where = 'request body'): void {
  let known = ZONE_NAME.test(timezone);
  if (known) {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: timezone });
    } catch {
      known = false;
    }
  }
  if (!known) {
    throw badRequest(`invalid ${where}: ${field}: "${timezone}" is not an IANA time zone name, e.g. Europe/Paris`, {
      fields: [{ field, message: 'not an IANA time zone name' }],
    });
  }
}

/** The cron of a schedule in its time zone; throws 400 saying what is wrong with either. */
export function scheduleCron(
  expression: string,
  timezone: string,
  rules: ScheduleRules,
  where: Where = 'request body',
): Cron {
  checkTimezone(timezone, 'timezone', where);
  const fields = expression.trim().split(/\s+/).length;
  const fail = (message: string) =>
    badRequest(`invalid ${where}: cron: ${message}`, { fields: [{ field: 'cron', message }] });
  if (fields === 6 && !expression.trim().startsWith('@') && !rules.allowSeconds) {
    throw fail(
      'six fields (seconds first) need SCHEDULES_ALLOW_SECONDS=true on the server; schedules fire once a minute at ' +
        'the finest: give five fields (minute hour day-of-month month day-of-week)',
    );
  }
  // Counted before the library reads it, whose own refusal ("five, six, or seven parts") names forms it is not given.
  const nickname = expression.trim().startsWith('@');
  if (!nickname && fields !== 5 && !(fields === 6 && rules.allowSeconds)) {
    throw fail(
      `"${expression.trim()}" is not five fields: give minute hour day-of-month month day-of-week, e.g. ` +
        '"*/5 * * * *" for every 5 minutes, or "0 9 * * 1-5" for weekdays at 09:00',
    );
  }
  let cron: Cron;
  try {
    cron = new Cron(expression, {
      timezone,
      paused: true,
      mode: rules.allowSeconds ? '5-or-6-parts' : '5-part',
      fixedTimeRule: 'no-wildcard',
    });
  } catch (error) {
    throw fail(`${(error as Error).message.replace(/^CronPattern: /, '')}`);
  }
  if (!cron.nextRun()) throw fail('it never fires after now');
  return cron;
}

/**
 * Occurrences read to find how close a cron's fires come: a cron shows its pace within its first day of fires, and a
 * hundred also pass the turn of a day, a month or a year where most crons whose times are far apart come closest.
 */
const PACE_SAMPLES = 100;

/**
 * The least time between two fires of a cron, in seconds, over its next occurrences; the reading stops at the first
 * gap under `floorS`. Give it the cron in UTC, so that a change of daylight saving time neither narrows nor widens it:
 * the pace as written. Null for a cron that fires once at the most.
 */
export function closestFiresS(cron: Cron, floorS: number): number | null {
  let closest: number | null = null;
  let previous = cron.nextRun();
  for (let read = 1; previous && read < PACE_SAMPLES && (closest === null || closest >= floorS); read++) {
    const next = cron.nextRun(previous);
    if (!next) break;
    const gap = (next.getTime() - previous.getTime()) / 1000;
    if (closest === null || gap < closest) closest = gap;
    previous = next;
  }
  return closest;
}

/** 300 → `5 minutes`, 1 → `1 second`: a pace in words. */
export function inWords(seconds: number): string {
  const [unit, size] = seconds % 3600 === 0 ? ['hour', 3600] : seconds % 60 === 0 ? ['minute', 60] : ['second', 1];
  const count = seconds / size;
  return `${count} ${unit}${count === 1 ? '' : 's'}`;
}

/** The next `count` occurrences strictly after `after`. */
export function nextTimes(cron: Cron, after: Date, count: number): Date[] {
  return cron.nextRuns(count, after);
}

export function nextAfter(cron: Cron, after: Date): Date | null {
  return cron.nextRun(after);
}

/** The occurrences due at `now`, from the first not yet fired (`from`): how many, the first and the last. */
export interface Due {
  first: Date;
  latest: Date;
  count: number;
  /** Counting stopped at the cap: `count` is a lower bound. */
  more: boolean;
  /** The first occurrence after `latest`: where the schedule goes on. */
  next: Date | null;
}

/**
 * Walks from `from` (an occurrence, due) through every occurrence up to `now`. The walk starts at the stored
 * occurrence rather than at `now`, so that an occurrence repeated by a change of daylight saving time is never taken
 * for a new one. After `cap` occurrences (an every-minute schedule whose servers were all off for weeks) it jumps to
 * `now`'s neighbourhood.
 */
export function dueAt(cron: Cron, from: Date, now: Date, cap = 10_000): Due {
  let latest = from;
  let count = 1;
  let next = cron.nextRun(from);
  while (next && next.getTime() <= now.getTime() && count < cap) {
    latest = next;
    count++;
    next = cron.nextRun(next);
  }
  const more = Boolean(next && next.getTime() <= now.getTime());
  if (more) {
    latest = cron.previousRuns(1, new Date(now.getTime() + 1))[0] ?? latest;
    next = cron.nextRun(latest);
  }
  return { first: from, latest, count, more, next };
}

/** A time as a person in `timezone` reads it: `2026-03-08 03:00:00 -04:00`. */
export function localTime(date: Date, timezone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-CA', {
      timeZone: timezone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
      timeZoneName: 'longOffset',
    })
      .formatToParts(date)
      .map((part) => [part.type, part.value]),
  );
  const offset = parts.timeZoneName === 'GMT' ? '+00:00' : parts.timeZoneName!.replace('GMT', '');
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second} ${offset}`;
}
