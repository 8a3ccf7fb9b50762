import { describe, expect, it } from 'vitest';
import { capToolText } from './tool-result';

describe('capToolText', () => {
  it('leaves an answer within the limit as it is', () => {
    expect(capToolText('a'.repeat(100), { max: 100 })).toBe('a'.repeat(100));
  });

  it('cuts a longer answer to the limit, the note of what was cut included', () => {
    const capped = capToolText('a'.repeat(1000), { max: 100 });
    expect(capped.length).toBeLessThanOrEqual(100);
    const kept = capped.indexOf('\n');
    expect(capped.slice(kept)).toBe(`\n[cut: ${1000 - kept} of 1000 characters not shown]`);
  });

  it('never splits a character made of two UTF-16 units', () => {
    const text = '😀'.repeat(500);
    for (let max = 60; max < 70; max++) {
      const capped = capToolText(text, { max });
      expect(capped.length).toBeLessThanOrEqual(max);
      expect(capped.split('\n')[0]).toMatch(/^(😀)+$/u);
    }
  });

  it('says what was never read, however little was shown', () => {
    expect(capToolText('abc', { unread: 'output past 10 MiB' })).toBe('abc\n[cut: output past 10 MiB]');
  });
});
