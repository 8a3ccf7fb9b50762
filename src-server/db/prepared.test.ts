import { describe, expect, it } from 'vitest';
import { prepared } from './prepared';

describe('prepared', () => {
  it('names a text the same each time, and two texts never alike', () => {
    const a = prepared('SELECT 1 AS a');
    const b = prepared('SELECT 2 AS b');
    expect(prepared('SELECT 1 AS a')).toEqual(a);
    expect(a.text).toBe('SELECT 1 AS a');
    expect(b.name).not.toBe(a.name);
  });
});
