import { argumentProblems } from '@contracts/tool-arguments';
import canonicalize from 'canonicalize';
import type { ToolCallView } from './tool-events';
import { peopleList } from './person-name';

/** A call's arguments as a person reads and edits them. */
export function prettyJson(value: unknown): string {
  return JSON.stringify(value, null, 2);
}

/** Longer texts are shown collapsed, with their size, so that one call's output does not bury the transcript. */
const LONG_CHARS = 600;
const LONG_LINES = 12;

export function isLong(text: string): boolean {
  return text.length > LONG_CHARS || lineCount(text) > LONG_LINES;
}

function lineCount(text: string): number {
  return text === '' ? 0 : text.split('\n').length;
}

/** "3 lines, 120 bytes", "1 line, 1.5 KiB". */
export function textSize(text: string): string {
  const lines = lineCount(text);
  const bytes = new TextEncoder().encode(text).length;
  const size =
    bytes < 1024
      ? `${bytes} byte${bytes === 1 ? '' : 's'}`
      : bytes < 1024 * 1024
        ? `${(bytes / 1024).toFixed(1)} KiB`
        : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
  return `${lines} line${lines === 1 ? '' : 's'}, ${size}`;
}

/** The arguments a person typed: the object, or why it cannot be sent (one line per problem). */
export type ParsedArguments = { value: Record<string, unknown>; problems: [] } | { value: null; problems: string[] };

/**
 * Reads the arguments editor's text and checks it against the tool's input schema, with the validator the server
 * checks an edit with: what it would refuse is refused here first.
 */
export function parseArguments(text: string, schema: Record<string, unknown>): ParsedArguments {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { value: null, problems: [`not JSON: ${(e as Error).message}`] };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return { value: null, problems: ['/: the arguments must be a JSON object'] };
  const problems = argumentProblems(schema, value);
  return problems.length ? { value: null, problems } : { value: value as Record<string, unknown>, problems: [] };
}

/** Whether arguments differ from the model's as the server tells them apart: by their RFC 8785 canonical form. */
export function argumentsChanged(value: Record<string, unknown>, canonical: string): boolean {
  return canonicalize(value) !== canonical;
}

/** What a publish step wrote, as a person checks it: where (its other arguments, such as `path`) and how much. */
export function publishedFacts(call: ToolCallView): { where: [string, string][]; size: string } | null {
  if (!call.publish) return null;
  const content = call.arguments[call.publish.content];
  const where = Object.entries(call.arguments)
    .filter(([name]) => name !== call.publish!.content)
    .map(([name, value]): [string, string] => [name, typeof value === 'string' ? value : JSON.stringify(value)]);
  return { where, size: textSize(typeof content === 'string' ? content : JSON.stringify(content ?? '')) };
}

const listOf = (people: string[]) => (people.length ? ` by ${peopleList(people)}` : '');

/** What became of a call, in a few words: how it was let through or decided, and whether it has answered. */
export function toolCallStatusText(call: ToolCallView): string {
  const by = listOf(call.decision?.deciders ?? []);
  const answered = call.result !== null;
  // A call that answered with an error (its arguments refused, the tool failing) did not do its work: not "ran".
  const ran = call.is_error ? 'failed' : 'ran';
  switch (call.status) {
    case 'allowed': {
      const why =
        call.policy === 'granted'
          ? 'granted for the thread'
          : call.policy === 'covered'
            ? 'covered by the gate'
            : 'allowed';
      return answered ? `${call.is_error ? 'Failed' : 'Ran'} (${why})` : `Running (${why})…`;
    }
    case 'denied':
      return 'Not run: not offered to this phase';
    case 'waiting':
      return 'Waiting for a decision';
    case 'approved':
      return answered ? `Approved${by}; ${ran}` : `Approved${by}; running…`;
    case 'edited':
      return answered ? `Approved with edited arguments${by}; ${ran}` : `Approved with edited arguments${by}; running…`;
    case 'responded':
      return `Answered in the tool's place${by}`;
    case 'rejected':
      return `Rejected${by}: not run`;
    case 'expired':
      return call.decision?.outcome === 'approve'
        ? `Expired: approved by its deadline rule${answered ? `; ${ran}` : ''}`
        : 'Expired: not run';
  }
}
