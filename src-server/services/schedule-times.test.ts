import { describe, expect, it } from 'vitest';
import { ServiceError } from '../contracts/errors';
import { closestFiresS, dueAt, inWords, localTime, nextAfter, nextTimes, scheduleCron } from './schedule-times';

const NY = 'America/New_York';
const minutes = { allowSeconds: false };
const iso = (dates: Date[]) => dates.map((d) => d.toISOString());
const local = (dates: Date[]) => dates.map((d) => localTime(d, NY));

describe('next fire times across the daylight-saving changes of America/New_York in 2026', () => {
  it('2026-03-08: 02:30 does not exist that night, so the daily 02:30 fires once, at 03:00 EDT, just after the gap', () => {
    const cron = scheduleCron('30 2 * * *', NY, minutes);
    const times = nextTimes(cron, new Date('2026-03-06T12:00:00Z'), 4);
    expect(local(times)).toEqual([
      '2026-03-07 02:30:00 -05:00',
      '2026-03-08 03:00:00 -04:00',
      '2026-03-09 02:30:00 -04:00',
      '2026-03-10 02:30:00 -04:00',
    ]);
    expect(iso(times)).toEqual([
      '2026-03-07T07:30:00.000Z',
      '2026-03-08T07:00:00.000Z',
      '2026-03-09T06:30:00.000Z',
      '2026-03-10T06:30:00.000Z',
    ]);
  });

  it('2026-11-01: 01:30 happens twice that night, and the daily 01:30 fires once, at the first (EDT)', () => {
    const cron = scheduleCron('30 1 * * *', NY, minutes);
    const times = nextTimes(cron, new Date('2026-10-30T12:00:00Z'), 3);
    expect(local(times)).toEqual([
      '2026-10-31 01:30:00 -04:00',
      '2026-11-01 01:30:00 -04:00',
      '2026-11-02 01:30:00 -05:00',
    ]);
    // From the fire itself, the repeated 01:30 (EST, an hour later) is not the next one: the next day's is.
    expect(nextAfter(cron, new Date('2026-11-01T05:30:00Z'))!.toISOString()).toBe('2026-11-02T06:30:00.000Z');
    // Nor does a scheduler that walks from the stored occurrence take the repeat for a missed one.
    const due = dueAt(cron, new Date('2026-11-01T05:30:00Z'), new Date('2026-11-01T06:45:00Z'));
    expect(due.count).toBe(1);
    expect(due.next!.toISOString()).toBe('2026-11-02T06:30:00.000Z');
  });

  it('a list of fixed times (30 1,13) is fixed-time too: once at the repeated 01:30', () => {
    const cron = scheduleCron('30 1,13 * * *', NY, minutes);
    expect(local(nextTimes(cron, new Date('2026-10-31T20:00:00Z'), 3))).toEqual([
      '2026-11-01 01:30:00 -04:00',
      '2026-11-01 13:30:00 -05:00',
      '2026-11-02 01:30:00 -05:00',
    ]);
  });

  it('an interval job keeps its pace in real time: every 30 minutes through both changes', () => {
    const cron = scheduleCron('*/30 * * * *', NY, minutes);
    expect(local(nextTimes(cron, new Date('2026-03-08T06:00:00Z'), 3))).toEqual([
      '2026-03-08 01:30:00 -05:00',
      '2026-03-08 03:00:00 -04:00',
      '2026-03-08 03:30:00 -04:00',
    ]);
    const fall = nextTimes(cron, new Date('2026-11-01T04:45:00Z'), 5);
    expect(local(fall)).toEqual([
      '2026-11-01 01:00:00 -04:00',
      '2026-11-01 01:30:00 -04:00',
      '2026-11-01 01:00:00 -05:00',
      '2026-11-01 01:30:00 -05:00',
      '2026-11-01 02:00:00 -05:00',
    ]);
    // Thirty minutes apart in real time, never twice at one instant.
    expect(fall.slice(1).map((d, i) => d.getTime() - fall[i]!.getTime())).toEqual(Array(4).fill(30 * 60_000));
  });
});

describe('the cron a schedule may have', () => {
  const refused = (expression: string, timezone = 'UTC', allowSeconds = false) => {
    try {
      scheduleCron(expression, timezone, { allowSeconds });
    } catch (error) {
      expect(error).toBeInstanceOf(ServiceError);
      expect((error as ServiceError).status).toBe(400);
      return (error as ServiceError).message;
    }
    throw new Error(`"${expression}" in ${timezone} was accepted`);
  };

  it('fires once a minute at the finest: a field of seconds needs SCHEDULES_ALLOW_SECONDS', () => {
    expect(refused('*/5 * * * * *')).toMatch(/^invalid request body: cron: six fields .*SCHEDULES_ALLOW_SECONDS=true/);
    const seconds = scheduleCron('*/5 * * * * *', 'UTC', { allowSeconds: true });
    expect(iso(nextTimes(seconds, new Date('2026-01-01T00:00:00Z'), 2))).toEqual([
      '2026-01-01T00:00:05.000Z',
      '2026-01-01T00:00:10.000Z',
    ]);
    expect(iso(nextTimes(scheduleCron('* * * * *', 'UTC', minutes), new Date('2026-01-01T00:00:30Z'), 2))).toEqual([
      '2026-01-01T00:01:00.000Z',
      '2026-01-01T00:02:00.000Z',
    ]);
  });

  it('refuses what is not a cron expression, and names that are not IANA time zones', () => {
    // Words are not read: the answer says which five fields to give, with an example of the words' meaning.
    expect(refused('every 5 minutes')).toBe(
      'invalid request body: cron: "every 5 minutes" is not five fields: give minute hour day-of-month month ' +
        'day-of-week, e.g. "*/5 * * * *" for every 5 minutes, or "0 9 * * 1-5" for weekdays at 09:00',
    );
    expect(refused('every day')).toMatch(/^invalid request body: cron: /);
    expect(refused('61 * * * *')).toMatch(/^invalid request body: cron: /);
    expect(refused('* * * *')).toMatch(/^invalid request body: cron: /);
    expect(refused('0 9 * * *', 'Mars/Olympus')).toBe(
      'invalid request body: timezone: "Mars/Olympus" is not an IANA time zone name, e.g. Europe/Paris',
    );
    expect(refused('0 9 * * *', '+01:00')).toMatch(/not an IANA time zone name/);
    expect(refused('0 0 30 2 *')).toBe('invalid request body: cron: it never fires after now');
  });
});

describe('occurrences due when a server comes back', () => {
  it('counts the missed ones from the stored occurrence, and says where the schedule goes on', () => {
    const cron = scheduleCron('0 * * * *', 'UTC', minutes);
    const due = dueAt(cron, new Date('2026-01-01T10:00:00Z'), new Date('2026-01-01T13:20:00Z'));
    expect(due).toMatchObject({ count: 4, more: false });
    expect(due.latest.toISOString()).toBe('2026-01-01T13:00:00.000Z');
    expect(due.next!.toISOString()).toBe('2026-01-01T14:00:00.000Z');
  });

  it('stops counting at the cap, and still finds the latest occurrence and the next', () => {
    const cron = scheduleCron('* * * * *', 'UTC', minutes);
    const due = dueAt(cron, new Date('2026-01-01T00:00:00Z'), new Date('2026-01-08T00:00:30Z'), 100);
    expect(due).toMatchObject({ count: 100, more: true });
    expect(due.latest.toISOString()).toBe('2026-01-08T00:00:00.000Z');
    expect(due.next!.toISOString()).toBe('2026-01-08T00:01:00.000Z');
  });
});

describe("how close a cron's fires come (the finest a role may schedule)", () => {
  const closest = (expression: string, floorS = 1) => closestFiresS(scheduleCron(expression, 'UTC', minutes), floorS);

  it('reads the pace as written, where the fires come closest, wherever in the day or the year that is', () => {
    expect(closest('*/5 * * * *')).toBe(300);
    expect(closest('0 9 * * 1-5')).toBe(86_400);
    // Close once a day only: 09:00 and 09:01.
    expect(closest('0,1 9 * * *')).toBe(60);
    // At the turn of the day: 23:00, then 00:00.
    expect(closest('0 0,23 * * *')).toBe(3600);
    // At the turn of the year: 31 December 23:00, then 1 January 00:00.
    expect(closest('0 0,23 1,31 1,12 *')).toBe(3600);
    expect(closestFiresS(scheduleCron('*/2 * * * * *', 'UTC', { allowSeconds: true }), 1)).toBe(2);
  });

  it('stops reading at the first gap under the floor', () => {
    expect(closest('* * * * *', 300)).toBe(60);
  });

  it('says a pace in words', () => {
    expect([1, 10, 60, 300, 3600, 5400, 7200].map(inWords)).toEqual([
      '1 second',
      '10 seconds',
      '1 minute',
      '5 minutes',
      '1 hour',
      '90 minutes',
      '2 hours',
    ]);
  });
});
