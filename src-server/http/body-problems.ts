/** How deep a request body may nest: deeper than any field of the API takes, shallow enough to walk without care. */
export const MAX_BODY_DEPTH = 64;

/** A lone surrogate: half a character, which no UTF-8 text (PostgreSQL's text and jsonb among them) can hold. */
const LONE_SURROGATE = /\p{Surrogate}/u;

/**
 * What no request may hold, found before the schema reads it and without recursion, so that a body nested thousands
 * deep is a 400 rather than an exhausted stack: nesting past MAX_BODY_DEPTH; a key `__proto__` (zod drops such keys
 * without a word, since they would set a prototype, so an edit keyed so would pass as no edit at all; no field of the
 * API is named so: refused, not ignored); a text or key that is not well-formed Unicode.
 */
export function bodyProblems(value: unknown): { field: string; message: string }[] {
  const problems: { field: string; message: string }[] = [];
  const pending: { node: unknown; path: string[] }[] = [{ node: value, path: [] }];
  for (let i = 0; i < pending.length; i++) {
    const { node, path } = pending[i]!;
    if (typeof node === 'string') {
      if (LONE_SURROGATE.test(node)) problems.push({ field: path.join('.'), message: 'is not valid Unicode text' });
      continue;
    }
    if (!node || typeof node !== 'object') continue;
    if (path.length >= MAX_BODY_DEPTH) {
      return [{ field: path.join('.'), message: `nests deeper than ${MAX_BODY_DEPTH} levels` }];
    }
    for (const [key, item] of Array.isArray(node) ? node.entries() : Object.entries(node)) {
      const field = [...path, String(key)];
      if (key === '__proto__') problems.push({ field: field.join('.'), message: 'no field is named __proto__' });
      else if (typeof key === 'string' && LONE_SURROGATE.test(key)) {
        problems.push({ field: field.join('.'), message: 'its name is not valid Unicode text' });
      } else pending.push({ node: item, path: field });
    }
  }
  return problems;
}
