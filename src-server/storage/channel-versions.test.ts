import { describe, expect, it } from 'vitest';
import { nextChannelVersion } from './channel-versions';

describe('the checkpointers’ channel versions', () => {
  const saver = { getNextVersion: nextChannelVersion };

  it('go up by one whole number from any version, old integer ones included, and stay numbers', () => {
    for (const current of [undefined, 1, 7, 7.25, 41.999999999]) {
      const next = saver.getNextVersion(current);
      expect(typeof next).toBe('number');
      expect(Math.floor(next)).toBe(Math.floor(current ?? 0) + 1);
      expect(next).toBeGreaterThan(current ?? 0);
    }
  });

  it('differ between two branches that continue from the same version', () => {
    const versions = new Set(Array.from({ length: 1000 }, () => String(saver.getNextVersion(3))));
    expect(versions.size).toBe(1000);
  });

  it('print as PostgreSQL prints them back from JSON, so each value is found under its version', () => {
    for (let i = 0; i < 100; i++) {
      const next = saver.getNextVersion(i);
      expect(String(next)).toMatch(/^\d+\.\d{1,9}$/);
      expect(Number(String(next))).toBe(next);
    }
  });
});
