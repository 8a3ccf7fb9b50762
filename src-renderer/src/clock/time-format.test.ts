import { describe, expect, it } from 'vitest';
import { absoluteDate, absoluteTime, dayLabel, relativeTime } from './time-format';

describe('the studio time format', () => {
  const now = Date.parse('2026-03-04T12:00:00Z');
  const at = (ms: number) => new Date(now + ms).toISOString();
  const MIN = 60_000;

  it('says a moment relative to now, behind and ahead', () => {
    expect(relativeTime(at(-10_000), now)).toBe('just now');
    expect(relativeTime(at(10_000), now)).toBe('in a moment');
    // The server's clock a little ahead of the browser's: a moment it just stamped is now.
    expect(relativeTime(at(3_000), now)).toBe('just now');
    expect(relativeTime(at(-12 * MIN), now)).toBe('12 min ago');
    expect(relativeTime(at(25 * MIN), now)).toBe('in 25 min');
    expect(relativeTime(at(-3 * 60 * MIN), now)).toBe('3 h ago');
    expect(relativeTime(at(-26 * 60 * MIN), now)).toBe('yesterday');
    expect(relativeTime(at(30 * 60 * MIN), now)).toBe('tomorrow');
    expect(relativeTime(at(-4 * 24 * 60 * MIN), now)).toBe('4 days ago');
    expect(relativeTime(at(4 * 24 * 60 * MIN), now)).toBe('in 4 days');
  });

  it('gives a week or more away as the date of the absolute format', () => {
    const old = at(-40 * 24 * 60 * MIN);
    expect(relativeTime(old, now)).toBe(absoluteDate(old));
    expect(absoluteTime(old).startsWith(absoluteDate(old))).toBe(true);
  });

  it('writes the absolute format to the second on a 24-hour clock, with the zone it was asked for', () => {
    const moment = '2026-03-04T21:05:09Z';
    expect(absoluteTime(moment, 'UTC')).toMatch(/21:05:09/);
    expect(absoluteTime(moment, 'UTC')).toMatch(/2026/);
    expect(absoluteTime(moment, 'America/New_York')).toMatch(/16:05:09 EST$/);
    expect(absoluteTime(moment, 'Asia/Tokyo')).toMatch(/06:05:09/);
  });

  it('names a usage day by its UTC date, whatever the zone', () => {
    expect(dayLabel('2026-03-04')).toMatch(/4/);
    expect(dayLabel('2026-03-04')).not.toMatch(/2026/);
  });
});
