import { describe, expect, it } from 'vitest';
import { peopleList, personName } from './person-name';

describe("people's names", () => {
  it('says what the built-in callers are, and leaves people as they are named', () => {
    expect(personName('api-token')).toBe('the API token');
    expect(personName('anonymous')).toBe('the anonymous administrator');
    expect(personName('Ada Lovelace')).toBe('Ada Lovelace');
  });

  it('lists several with "and"', () => {
    expect(peopleList([])).toBe('');
    expect(peopleList(['Ada'])).toBe('Ada');
    expect(peopleList(['Ada', 'api-token'])).toBe('Ada and the API token');
    expect(peopleList(['Ada', 'Ben', 'Cy'])).toBe('Ada, Ben and Cy');
  });
});
