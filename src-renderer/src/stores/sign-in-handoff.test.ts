import { LoginQuerySchema } from '@contracts/auth';
import { describe, expect, it } from 'vitest';
import { beginHandoff, endHandoff } from './sign-in-handoff';

/** A tab's session storage, as the browser's Storage interface has it. */
function tabStorage(): Storage {
  const items = new Map<string, string>();
  return {
    get length() {
      return items.size;
    },
    key: (i) => [...items.keys()][i] ?? null,
    getItem: (key) => items.get(key) ?? null,
    setItem: (key, value) => void items.set(key, value),
    removeItem: (key) => void items.delete(key),
    clear: () => items.clear(),
  };
}

describe("a tab's sign-in handoff", () => {
  it('is a new random value each time, in the form /auth/login accepts', () => {
    const storage = tabStorage();
    const first = beginHandoff(storage);
    const second = beginHandoff(storage);
    expect(first).not.toBe(second);
    expect(first).toMatch(/^[\w-]{43}$/);
    expect(LoginQuerySchema.safeParse({ handoff: first }).success).toBe(true);
  });

  it("recognises the value this tab sent, once; another tab's or a made-up one is not its own", () => {
    const tab = tabStorage();
    const value = beginHandoff(tab);
    expect(endHandoff(beginHandoff(tabStorage()), tab)).toBe(false);
    expect(endHandoff('made-up-value-of-22-chars', tab)).toBe(false);
    expect(endHandoff(null, tab)).toBe(false);
    expect(endHandoff(value, tab)).toBe(true);
    expect(endHandoff(value, tab)).toBe(false);
  });

  it('recognises nothing in a tab that started no sign-in', () => {
    expect(endHandoff('any-value-0123456789-abc', tabStorage())).toBe(false);
  });
});
