import { describe, expect, it } from 'vitest';
import { lineCountOf, lineRange, phaseLine, problemsByLine, problemText } from './source-lines';

const unknown = { line: 3, field: 'phases.analysis.colour', message: 'unknown field' };

describe('problemText', () => {
  it('says the line, the field and the message', () => {
    expect(problemText(unknown)).toBe('line 3: phases.analysis.colour: unknown field');
  });

  it('leaves out a line or a field the problem does not have', () => {
    expect(problemText({ line: null, field: 'name', message: 'must stay "x"' })).toBe('name: must stay "x"');
    expect(problemText({ line: 1, field: '', message: 'the source must start with ---' })).toBe(
      'line 1: the source must start with ---',
    );
  });
});

describe('problemsByLine', () => {
  it('groups the problems by their line', () => {
    const other = { line: 3, field: 'phases.analysis.size', message: 'unknown field' };
    const byLine = problemsByLine([unknown, other, { line: 7, field: 'name', message: 'is required' }], 10);
    expect([...byLine.keys()]).toEqual([3, 7]);
    expect(byLine.get(3)).toEqual([unknown, other]);
  });

  it('marks a problem past the end on the last line, and one without a line nowhere', () => {
    const byLine = problemsByLine(
      [
        { line: 40, field: '', message: 'the frontmatter is not closed' },
        { line: null, field: 'name', message: 'taken' },
      ],
      12,
    );
    expect([...byLine.keys()]).toEqual([12]);
  });
});

describe('lineCountOf', () => {
  it('counts the lines an editor shows', () => {
    expect(lineCountOf('')).toBe(1);
    expect(lineCountOf('a')).toBe(1);
    expect(lineCountOf('a\nb\n')).toBe(3);
  });
});

describe('lineRange', () => {
  const text = 'first\nsecond\n\nfourth';
  it('finds the start and end of a line', () => {
    expect(lineRange(text, 1)).toEqual({ start: 0, end: 5 });
    expect(text.slice(lineRange(text, 2).start, lineRange(text, 2).end)).toBe('second');
    expect(lineRange(text, 3)).toEqual({ start: 13, end: 13 });
    expect(text.slice(lineRange(text, 4).start, lineRange(text, 4).end)).toBe('fourth');
  });

  it('stops at the last line for a line past the end', () => {
    expect(lineRange(text, 9)).toEqual(lineRange(text, 4));
  });
});

describe('phaseLine', () => {
  const source = [
    '---', // 1
    'name: x', // 2
    'phases:', // 3
    '  intake:', // 4
    '    name: analysis', // 5
    '    description: >-', // 6
    '      analysis: not a key here', // 7
    '', // 8
    '  # the review', // 9
    '  analysis:', // 10
    '    name: Review', // 11
    'tools: {}', // 12
    '---', // 13
    'analysis: in the body', // 14
  ].join('\n');

  it('finds the line that describes a phase, at the depth of the phases', () => {
    expect(phaseLine(source, 'intake')).toBe(4);
    expect(phaseLine(source, 'analysis')).toBe(10);
  });

  it('is null for a phase the source does not describe, or a source without phases', () => {
    expect(phaseLine(source, 'gate')).toBeNull();
    expect(phaseLine('---\nname: x\n---\nphases', 'intake')).toBeNull();
  });
});
