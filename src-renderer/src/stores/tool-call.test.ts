import { describe, expect, it } from 'vitest';
import {
  argumentsChanged,
  isLong,
  parseArguments,
  prettyJson,
  publishedFacts,
  textSize,
  toolCallStatusText,
} from './tool-call';
import type { ToolCallView } from './tool-events';

/** The input schema of project.write_file, as the server derives it from its own definition. */
const WRITE_FILE = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: { path: { type: 'string', maxLength: 4096 }, content: { type: 'string' } },
  required: ['path', 'content'],
  additionalProperties: false,
};

describe('the arguments editor', () => {
  it('sends arguments that fit the schema, and says why others do not, the way the server would', () => {
    expect(parseArguments('{ "path": "notes.md", "content": "hi" }', WRITE_FILE)).toEqual({
      value: { path: 'notes.md', content: 'hi' },
      problems: [],
    });
    const wrongType = parseArguments('{ "path": "notes.md", "content": 42 }', WRITE_FILE);
    expect(wrongType.value).toBeNull();
    expect(wrongType.problems.join('\n')).toMatch(/^\/content: /m);
    expect(parseArguments('{ "path": "notes.md" }', WRITE_FILE).problems.join('\n')).toMatch(/content/);
    expect(parseArguments('{ "path": "a", "content": "b", "mode": 1 }', WRITE_FILE).problems).not.toEqual([]);
    expect(parseArguments('{ "path": ', WRITE_FILE).problems[0]).toMatch(/^not JSON: /);
    expect(parseArguments('["notes.md"]', WRITE_FILE).problems).toEqual(['/: the arguments must be a JSON object']);
  });

  it('counts an edit only when the arguments differ, whatever the order of their keys', () => {
    const canonical = '{"content":"hi","path":"notes.md"}';
    expect(argumentsChanged({ path: 'notes.md', content: 'hi' }, canonical)).toBe(false);
    expect(argumentsChanged({ path: 'notes.md', content: 'hi!' }, canonical)).toBe(true);
    expect(prettyJson({ path: 'a' })).toBe('{\n  "path": "a"\n}');
  });
});

describe('tool text in the transcript', () => {
  it('collapses long texts and says how long they are', () => {
    expect(isLong('short')).toBe(false);
    expect(isLong('x'.repeat(601))).toBe(true);
    expect(isLong(Array.from({ length: 13 }, () => 'line').join('\n'))).toBe(true);
    expect(textSize('one line')).toBe('1 line, 8 bytes');
    expect(textSize(`${'é'.repeat(1024)}\nb`)).toBe('2 lines, 2.0 KiB');
  });

  it('says how each call went, and whether it has answered', () => {
    const call = (over: Partial<ToolCallView>): ToolCallView => ({
      call_id: 'c',
      node: 'intake',
      tool: 'project.write_file',
      server: 'project',
      arguments: {},
      policy: 'ask',
      status: 'waiting',
      decision: null,
      result: null,
      is_error: false,
      questions: [],
      ...over,
    });
    const ada = { reason: null, deciders: ['Ada'] };
    expect(toolCallStatusText(call({}))).toBe('Waiting for a decision');
    expect(toolCallStatusText(call({ policy: 'allow', status: 'allowed' }))).toBe('Running (allowed)…');
    expect(toolCallStatusText(call({ policy: 'covered', status: 'allowed', result: 'ok' }))).toBe(
      'Ran (covered by the gate)',
    );
    expect(
      toolCallStatusText(call({ status: 'edited', decision: { kind: 'edit', ...ada }, result: 'wrote notes.md' })),
    ).toBe('Approved with edited arguments by Ada; ran');
    expect(toolCallStatusText(call({ status: 'rejected', decision: { kind: 'reject', ...ada }, result: 'x' }))).toBe(
      'Rejected by Ada: not run',
    );
    expect(toolCallStatusText(call({ status: 'denied', policy: 'deny' }))).toBe('Not run: not offered to this phase');
    // Arguments the tool refused, or a tool that failed: the call did not do its work.
    const refused = 'invalid arguments for project.write_file: /path: expected string';
    expect(toolCallStatusText(call({ policy: 'allow', status: 'allowed', result: refused, is_error: true }))).toBe(
      'Failed (allowed)',
    );
    expect(
      toolCallStatusText(
        call({ status: 'approved', decision: { kind: 'approve', ...ada }, result: 'x', is_error: true }),
      ),
    ).toBe('Approved by Ada; failed');
  });

  it('tells where a publish step wrote and how much, without the approved text it wrote', () => {
    const published = publishedFacts({
      call_id: 't:publish',
      node: 'output',
      tool: 'project.write_file',
      server: 'project',
      arguments: { path: 'reviews/fix-the-retry-0b7f3c2e.md', if_exists: 'refuse', content: 'Approve.\n\nLooks good.' },
      policy: 'covered',
      publish: { from: 'analysis', content: 'content' },
      status: 'allowed',
      decision: null,
      result: 'created reviews/fix-the-retry-0b7f3c2e.md (21 bytes)',
      is_error: false,
      questions: [],
    });
    expect(published).toEqual({
      where: [
        ['path', 'reviews/fix-the-retry-0b7f3c2e.md'],
        ['if_exists', 'refuse'],
      ],
      size: '3 lines, 21 bytes',
    });
  });
});
