import { describe, expect, it } from 'vitest';
import { diffCounts, lineDiff, linesOf, withContext } from './line-diff';

const kinds = (before: string, after: string) =>
  lineDiff(before, after).map((l) => `${{ same: ' ', added: '+', removed: '-' }[l.kind]}${l.text}`);

describe('linesOf', () => {
  it('splits on any line end and starts no line after the last one', () => {
    expect(linesOf('a\r\nb\nc\n')).toEqual(['a', 'b', 'c']);
    expect(linesOf('')).toEqual([]);
    expect(linesOf('\n')).toEqual(['']);
  });
});

describe('lineDiff', () => {
  it('keeps equal texts whole, each line numbered in both', () => {
    expect(lineDiff('a\nb', 'a\nb')).toEqual([
      { kind: 'same', text: 'a', before: 1, after: 1 },
      { kind: 'same', text: 'b', before: 2, after: 2 },
    ]);
  });

  it('shows a changed line as removed then added, between the lines kept', () => {
    expect(kinds('name: x\ndescription: old\nbody', 'name: x\ndescription: new\nbody')).toEqual([
      ' name: x',
      '-description: old',
      '+description: new',
      ' body',
    ]);
  });

  it('numbers added and removed lines in their own text', () => {
    const diff = lineDiff('a\nb\nc', 'a\nc\nd');
    expect(diff).toEqual([
      { kind: 'same', text: 'a', before: 1, after: 1 },
      { kind: 'removed', text: 'b', before: 2, after: null },
      { kind: 'same', text: 'c', before: 3, after: 2 },
      { kind: 'added', text: 'd', before: null, after: 3 },
    ]);
    expect(diffCounts(diff)).toEqual({ added: 1, removed: 1 });
  });

  it('keeps the longest run of common lines when lines move', () => {
    expect(kinds('x\na\nb\nc', 'a\nb\nc\nx')).toEqual(['-x', ' a', ' b', ' c', '+x']);
  });

  it('diffs against an empty text', () => {
    expect(kinds('', 'a\nb')).toEqual(['+a', '+b']);
    expect(kinds('a\nb', '')).toEqual(['-a', '-b']);
  });

  it('ignores the difference between line ends', () => {
    expect(kinds('a\r\nb\r\n', 'a\nb')).toEqual([' a', ' b']);
  });

  it('rebuilds both texts from the diff', () => {
    const before = 'one\ntwo\nthree\nfour\nfive\nsix';
    const after = 'zero\none\nthree\nfour and a half\nfive\nsix\nseven';
    const diff = lineDiff(before, after);
    expect(diff.filter((l) => l.kind !== 'added').map((l) => l.text)).toEqual(linesOf(before));
    expect(diff.filter((l) => l.kind !== 'removed').map((l) => l.text)).toEqual(linesOf(after));
    expect(diffCounts(diff)).toEqual({ added: 3, removed: 2 });
  });
});

describe('withContext', () => {
  const before = Array.from({ length: 20 }, (_, i) => `line ${i + 1}`).join('\n');
  const shown = (items: ReturnType<typeof withContext>) =>
    items.map((item) => (item.kind === 'gap' ? `… ${item.count}` : `${item.kind[0]} ${item.text}`));

  it('keeps a few lines around each change and folds the rest', () => {
    const after = before.replace('line 10', 'line ten');
    expect(shown(withContext(lineDiff(before, after), 2))).toEqual([
      '… 7',
      's line 8',
      's line 9',
      'r line 10',
      'a line ten',
      's line 11',
      's line 12',
      '… 8',
    ]);
  });

  it('joins changes whose context meets, and folds nothing at the ends when they are changed', () => {
    const after = before.replace('line 1\n', 'line one\n').replace('line 5\n', 'line five\n');
    const items = shown(withContext(lineDiff(before, after), 2));
    expect(items.slice(0, 8)).toEqual([
      'r line 1',
      'a line one',
      's line 2',
      's line 3',
      's line 4',
      'r line 5',
      'a line five',
      's line 6',
    ]);
    expect(items.at(-1)).toBe('… 13');
  });

  it('folds a diff without changes into one gap', () => {
    expect(withContext(lineDiff('a\nb', 'a\nb'))).toEqual([{ kind: 'gap', count: 2 }]);
  });
});
