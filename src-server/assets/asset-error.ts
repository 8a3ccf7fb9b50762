import path from 'node:path';
import type { z } from 'zod';

/** A problem in an asset file, as `<file>:<line>: <field>: <message>`; the build stops at the first one. */
export class AssetError extends Error {
  override name = 'AssetError';
}

/** A field as the keys and list positions that lead to it: ['phases', 'analysis', 'routes', 0, 'target']. */
export type FieldPath = readonly PropertyKey[];

/** A file problems are reported in, and, where its text is at hand, the line each field is written on. */
export interface AssetSource {
  file: string;
  /** The 1-based line in the file of the field's key, or of the nearest enclosing field that is written. */
  lineOf?: (field: FieldPath) => number;
}

// Keys written plainly; others (`files.*`, `project.read_file`) are quoted, so their dots read as part of the key.
const PLAIN_KEY = /^[A-Za-z0-9_-]+$/;

/** `phases.analysis.routes[0].target`, `tools.policies["files.*"]`: a field as an author would point at it in YAML. */
export function fieldName(segments: FieldPath): string {
  return segments.reduce<string>((field, segment) => {
    if (typeof segment === 'number') return `${field}[${segment}]`;
    const key = String(segment);
    if (!PLAIN_KEY.test(key)) return `${field}[${JSON.stringify(key)}]`;
    return field ? `${field}.${key}` : key;
  }, '');
}

/**
 * Stops the build at a problem. `field` is a path into the file, whose line the source knows, or a name in
 * parentheses for what is not a field (`(frontmatter)`, `(body)`), with its `line` given where there is one.
 */
export function fail(source: AssetSource, field: FieldPath | string, message: string, line?: number): never {
  const name = typeof field === 'string' ? field : fieldName(field);
  const at = line ?? (typeof field === 'string' ? undefined : source.lineOf?.(field));
  const file = path.relative(process.cwd(), source.file) || source.file;
  throw new AssetError(`${file}${at === undefined ? '' : `:${at}`}: ${name}: ${message}`);
}

/** The first problem zod found, at its field. */
export function zodFail(source: AssetSource, error: z.ZodError): never {
  const issue = error.issues[0]!;
  if (issue.code === 'unrecognized_keys') fail(source, [...issue.path, issue.keys[0]!], 'unknown field');
  const message =
    issue.code === 'invalid_type' && issue.message.endsWith('received undefined') ? 'is required' : issue.message;
  if (!issue.path.length) fail(source, '(top level)', message, source.lineOf?.([]));
  fail(source, issue.path, message);
}
