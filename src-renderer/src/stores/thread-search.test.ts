import type { Thread } from '@contracts/runs';
import { describe, expect, it } from 'vitest';
import {
  activeSinceMoment,
  appendNew,
  filterCount,
  isSearching,
  matchSummary,
  noSearch,
  searchFilter,
  type ThreadSearch,
} from './thread-search';

const search = (extra: Partial<ThreadSearch>): ThreadSearch => ({ ...noSearch(), ...extra });
const USER = '00000000-0000-4000-8000-0000000000a1';
const NOW = new Date(2025, 2, 10, 15, 30);

/** appendNew reads a thread's id alone. */
const thread = (id: string) => ({ id, last_message: `message ${id}` }) as Thread;

describe('a thread search', () => {
  it('searches when it has words or a filter, and counts the filters alone', () => {
    expect(isSearching(noSearch())).toBe(false);
    expect(isSearching(search({ text: '   ' }))).toBe(false);
    expect(isSearching(search({ text: 'loader' }))).toBe(true);
    expect(isSearching(search({ status: 'error' }))).toBe(true);
    expect(isSearching(search({ since: 'today' }))).toBe(true);
    expect(filterCount(search({ text: 'loader' }))).toBe(0);
    expect(filterCount(search({ agent: 'change-review', status: 'completed', mine: true, since: '7d' }))).toBe(4);
  });

  it('starts "last active" at the local day for Today, 7 or 30 days back otherwise', () => {
    expect(activeSinceMoment('any', NOW)).toBeNull();
    expect(activeSinceMoment('today', NOW)).toEqual(new Date(2025, 2, 10));
    expect(NOW.getTime() - activeSinceMoment('7d', NOW)!.getTime()).toBe(7 * 24 * 3600 * 1000);
    expect(NOW.getTime() - activeSinceMoment('30d', NOW)!.getTime()).toBe(30 * 24 * 3600 * 1000);
  });

  it('is the filter GET /threads takes, "Started by me" only with a user', () => {
    expect(searchFilter(noSearch(), USER, NOW)).toEqual({});
    expect(
      searchFilter(
        search({ text: ' "a phrase" -word ', agent: 'change-review', status: 'completed', mine: true, since: 'today' }),
        USER,
        NOW,
      ),
    ).toEqual({
      q: '"a phrase" -word',
      agent: 'change-review',
      status: 'completed',
      started_by: USER,
      from: new Date(2025, 2, 10).toISOString(),
    });
    expect(searchFilter(search({ mine: true }), null, NOW)).toEqual({});
  });

  it('says how many threads match, or that none do', () => {
    expect(matchSummary(1, false, search({ text: 'loader' }))).toBe('1 thread matches');
    expect(matchSummary(3, false, search({ text: 'loader' }))).toBe('3 threads match');
    expect(matchSummary(50, true, search({ text: 'loader' }))).toBe('50+ threads match');
    expect(matchSummary(0, false, search({ text: ' loader ' }))).toBe('No threads match “loader”.');
    expect(matchSummary(0, false, search({ text: 'loader', status: 'error' }))).toBe(
      'No threads match “loader” with these filters.',
    );
    expect(matchSummary(0, false, search({ status: 'error' }))).toBe('No threads match these filters.');
  });

  it('adds a further page without a thread twice', () => {
    const list = appendNew([thread('a'), thread('b')], [thread('b'), thread('c'), thread('c'), thread('d')]);
    expect(list.map((t) => t.id)).toEqual(['a', 'b', 'c', 'd']);
  });
});
