/**
 * PostgreSQL's `text` and `jsonb` cannot hold U+0000 (NUL), and a model's output may contain it: text written from a
 * run drops it instead of failing the write, and with it the run. Request fields never get here with one: the API
 * refuses a NUL in any field (400).
 */
export function storable<T extends string | null | undefined>(text: T): T {
  return (text?.includes('\u0000') ? text.replaceAll('\u0000', '') : text) as T;
}

/** JSON for a `jsonb` column, without NUL in any string (JSON would write it as `\u0000`, which jsonb refuses). */
export function storableJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) => (typeof item === 'string' ? storable(item) : item));
}
