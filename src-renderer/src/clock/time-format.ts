/**
 * The studio's one way of saying when something happened or will happen. Every date and time a person reads in the
 * studio comes from here:
 *
 * - A moment is said relative to now: "just now", "12 min ago", "3 h ago", "yesterday", "4 days ago", and ahead
 *   "in a moment", "in 25 min", "in 3 h", "tomorrow", "in 4 days"; a week or more away, its date. It is shown in a
 *   `<time>` element (TimeText.vue) whose title is the moment in full, in the one absolute format below.
 * - The absolute format: weekday, date and time to the second on a 24-hour clock, in the reader's language and time
 *   zone ("Mon, Mar 3, 2025, 14:02:05"); in another zone's time, with that zone's name (a schedule's times are in its
 *   own zone). It is shown as such only where the clock time is the point: the times a schedule fires, which a person
 *   checks against its cron.
 * - How long something lasted or has left is a span, not a moment ("waiting 12 min": formatSpan in
 *   stores/gate-decision.ts); anchored at a moment, its element carries that moment's title all the same.
 * - A day of the usage figures is a calendar day in UTC, not a moment: dayLabel.
 */

const SECOND = 1000;
/** How far apart the server's clock and the browser's may be before a moment reads as ahead. */
const CLOCK_SKEW_MS = 5 * SECOND;

/** "12 min ago", "in 25 min", …: `iso` against `now` (epoch ms). */
export function relativeTime(iso: string, now = Date.now(), timeZone?: string): string {
  const ms = Date.parse(iso) - now;
  // A moment the server stamped may sit a few seconds ahead of this browser's clock: that is now, not the future.
  const ahead = ms > CLOCK_SKEW_MS;
  const s = Math.round(Math.abs(ms) / SECOND);
  if (s < 45) return ahead ? 'in a moment' : 'just now';
  const say = (amount: string) => (ahead ? `in ${amount}` : `${amount} ago`);
  const min = Math.max(1, Math.round(s / 60));
  if (min < 60) return say(`${min} min`);
  const h = Math.round(min / 60);
  if (h < 24) return say(`${h} h`);
  const d = Math.round(h / 24);
  if (d === 1) return ahead ? 'tomorrow' : 'yesterday';
  if (d < 7) return say(`${d} days`);
  return absoluteDate(iso, timeZone);
}

const DATE: Intl.DateTimeFormatOptions = { weekday: 'short', year: 'numeric', month: 'short', day: 'numeric' };
const TIME: Intl.DateTimeFormatOptions = { hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' };

/** The moment in full: "Mon, Mar 3, 2025, 14:02:05"; in `timeZone`'s time with its name when one is given. */
export function absoluteTime(iso: string, timeZone?: string): string {
  return new Intl.DateTimeFormat(undefined, {
    ...DATE,
    ...TIME,
    ...(timeZone ? { timeZone, timeZoneName: 'short' } : {}),
  }).format(new Date(iso));
}

/** The date part of the absolute format, for a moment a week or more away: "Mon, Mar 3, 2025". */
export function absoluteDate(iso: string, timeZone?: string): string {
  return new Intl.DateTimeFormat(undefined, { ...DATE, ...(timeZone ? { timeZone } : {}) }).format(new Date(iso));
}

/** A UTC calendar day (`YYYY-MM-DD`) of the usage figures, as a chart's axis names it: "Mar 3". */
/** An hour of the Usage view's last 24 hours, in the reader's time: "14:00". */
export function hourLabel(hour: string): string {
  return new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' }).format(new Date(hour));
}

export function dayLabel(day: string): string {
  return new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' }).format(
    new Date(`${day}T00:00:00Z`),
  );
}
