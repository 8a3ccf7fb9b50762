import { Validator, type Schema } from '@cfworker/json-schema';

/**
 * Checks a tool call's arguments against the tool's input schema, the same way on the server (an edit at approval)
 * and in the studio (the arguments editor): a validator that compiles nothing at run time, so it works under the
 * studio's content security policy. Returns one line per problem, empty when the arguments fit.
 */
export function argumentProblems(schema: Record<string, unknown>, args: unknown): string[] {
  const result = new Validator(schema as Schema, '2020-12', false).validate(args);
  if (result.valid) return [];
  // The innermost errors say what is wrong; the outer ones only that something below failed.
  const leaves = result.errors.filter((e) => !['properties', 'allOf', 'anyOf', '$ref'].includes(e.keyword));
  return (leaves.length ? leaves : result.errors).map(
    (e) => `${e.instanceLocation.replace(/^#/, '') || '/'}: ${e.error}`,
  );
}
