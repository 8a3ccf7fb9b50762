import { describe, expect, it } from 'vitest';
import { canonicalArguments } from './canonical-arguments';

describe('canonical arguments', () => {
  it('are one text for the same arguments in any key order, with the SHA-256 of that text', () => {
    const a = canonicalArguments({ path: 'a.md', options: { b: 2, a: 1 } });
    const b = canonicalArguments(JSON.parse('{"options":{"a":1,"b":2},"path":"a.md"}') as Record<string, unknown>);
    expect(a).toEqual(b);
    expect(a.canonical).toBe('{"options":{"a":1,"b":2},"path":"a.md"}');
    expect(a.sha256).toMatch(/^[0-9a-f]{64}$/);
  });

  it('follow RFC 8785 for numbers and text', () => {
    expect(canonicalArguments({ n: 1.0, big: 1e21, s: 'é\u2028' }).canonical).toBe('{"big":1e+21,"n":1,"s":"é\u2028"}');
  });
});
