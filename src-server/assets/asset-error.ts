import path from 'node:path';
import type { z } from 'zod';
import { badRequest } from '../contracts/errors';

/**
 * A problem in an asset, as `<file>:<line>: <field>: <message>`; the build stops at the first one. Its parts are kept
 * apart too, for a compile that reports every problem of a source (agent-source.ts).
 */
export class AssetError extends Error {
  override name = 'AssetError';

  constructor(
    /** The file as the message names it: relative to the working directory. */
    readonly file: string,
    /** The 1-based line in the file, where there is one. */
    readonly line: number | undefined,
    /** The field as fieldName() writes it, or a name in parentheses for what is not a field: `(frontmatter)`. */
    readonly field: string,
    readonly detail: string,
  ) {
    super(`${file}${line === undefined ? '' : `:${line}`}: ${field}: ${detail}`);
  }
}

/** A field as the keys and list positions that lead to it: ['phases', 'analysis', 'routes', 0, 'target']. */
export type FieldPath = readonly PropertyKey[];

/** A file problems are reported in, and, where its text is at hand, the line each field is written on. */
export interface AssetSource {
  file: string;
  /** The 1-based line in the file of the field's key, or of the nearest enclosing field that is written. */
  lineOf?: (field: FieldPath) => number;
  /**
   * Present: the compile collects problems here. A check run through check() records its problem and the checks
   * after it go on; a problem that makes them meaningless still stops the compile. Absent: the first problem stops.
   */
  problems?: AssetError[];
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
 * Stops at a problem. `field` is a path into the file, whose line the source knows, or a name in parentheses for
 * what is not a field (`(frontmatter)`, `(body)`), with its `line` given where there is one.
 */
export function fail(source: AssetSource, field: FieldPath | string, message: string, line?: number): never {
  const name = typeof field === 'string' ? field : fieldName(field);
  const at = line ?? (typeof field === 'string' ? undefined : source.lineOf?.(field));
  const file = path.relative(process.cwd(), source.file) || source.file;
  throw new AssetError(file, at, name, message);
}

/**
 * Applies checks written for asset files to a request's body (an organisation's tool policies, a registered MCP
 * server): the first problem is a 400 `invalid request body: <field>: <problem>` with `details.fields`, as the body's
 * other problems are.
 */
export function checkedBody<T>(checks: (source: AssetSource) => T): T {
  try {
    return checks({ file: 'request body' });
  } catch (error) {
    if (!(error instanceof AssetError)) throw error;
    throw badRequest(`invalid request body: ${error.field ? `${error.field}: ` : ''}${error.detail}`, {
      fields: [{ field: error.field, message: error.detail }],
    });
  }
}

/**
 * Runs a check that stands on its own. When the source collects problems, the one it finds is recorded and
 * `fallback` stands in for its result, so the checks after it still run; otherwise the problem stops the build.
 */
export function check<T>(source: AssetSource, run: () => T, fallback: T): T {
  if (!source.problems) return run();
  try {
    return run();
  } catch (error) {
    if (!(error instanceof AssetError)) throw error;
    source.problems.push(error);
    return fallback;
  }
}

/** A problem after which the checks go on, when the source collects problems. */
export function report(source: AssetSource, field: FieldPath | string, message: string, line?: number): void {
  check(source, () => fail(source, field, message, line), undefined);
}

/**
 * Stops before anything is built from a source with problems: a collecting compile ends at the last one recorded,
 * which whoever collects records again as it catches it.
 */
export function stopAtProblems(source: AssetSource): void {
  const last = source.problems?.pop();
  if (last) throw last;
}

type Issue = z.ZodError['issues'][number];

interface Problem {
  field: FieldPath | string;
  message: string;
  line?: number;
}

function problemsOf(source: AssetSource, issue: Issue): Problem[] {
  if (issue.code === 'unrecognized_keys')
    return issue.keys.map((key) => ({ field: [...issue.path, key], message: 'unknown field' }));
  const message =
    issue.code === 'invalid_type' && issue.message.endsWith('received undefined') ? 'is required' : issue.message;
  if (!issue.path.length) return [{ field: '(top level)', message, line: source.lineOf?.([]) }];
  return [{ field: issue.path, message }];
}

/** Takes the unknown fields zod found out of `data`; false if one is not where zod says. */
function removeUnknownFields(data: unknown, issues: readonly Issue[]): boolean {
  return issues.every((issue) => {
    let node = data;
    for (const segment of issue.path) node = (node as Record<PropertyKey, unknown> | undefined)?.[segment];
    if (typeof node !== 'object' || node === null || issue.code !== 'unrecognized_keys') return false;
    return issue.keys.every((key) => Reflect.deleteProperty(node, key));
  });
}

/**
 * Reads `data` with `schema`; each issue zod finds is a problem at its field. Unknown fields are reported and taken
 * out, so the checks after this one still run on the rest; any other issue stops, once every issue is reported.
 */
export function parseWith<T>(source: AssetSource, schema: z.ZodType<T>, data: unknown): T {
  for (;;) {
    const parsed = schema.safeParse(data);
    if (parsed.success) return parsed.data;
    const { issues } = parsed.error;
    const problems = issues.flatMap((issue) => problemsOf(source, issue));
    const last = problems.pop()!;
    for (const p of problems) report(source, p.field, p.message, p.line);
    const unknownFieldsOnly = issues.every((issue) => issue.code === 'unrecognized_keys');
    if (!unknownFieldsOnly || !removeUnknownFields(data, issues)) fail(source, last.field, last.message, last.line);
    report(source, last.field, last.message, last.line);
  }
}
