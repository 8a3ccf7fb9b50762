import type { SourceProblem } from '@contracts/agents';

/** A problem as the list says it: `line 12: phases.analysis.foo: unknown field`, without a line when it has none. */
export function problemText(problem: SourceProblem): string {
  return [problem.line === null ? null : `line ${problem.line}`, problem.field || null, problem.message]
    .filter((part) => part !== null)
    .join(': ');
}

/**
 * The problems at each line of a text of `lineCount` lines, for its gutter. A problem past the last line (the
 * compiler speaks of the end of the text) is marked on the last line; one without a line is marked nowhere.
 */
export function problemsByLine(problems: SourceProblem[], lineCount: number): Map<number, SourceProblem[]> {
  const byLine = new Map<number, SourceProblem[]>();
  for (const problem of problems) {
    if (problem.line === null) continue;
    const line = Math.min(Math.max(problem.line, 1), Math.max(lineCount, 1));
    byLine.set(line, [...(byLine.get(line) ?? []), problem]);
  }
  return byLine;
}

/** How many lines an editor shows for a text: one more after a last line end, at least one. */
export function lineCountOf(text: string): number {
  let count = 1;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) count++;
  return count;
}

/** Where line `line` (1-based) of a text starts and ends, as offsets for a textarea's selection. */
export function lineRange(text: string, line: number): { start: number; end: number } {
  let start = 0;
  for (let n = 1; n < line; n++) {
    const next = text.indexOf('\n', start);
    if (next < 0) break;
    start = next + 1;
  }
  const end = text.indexOf('\n', start);
  return { start, end: end < 0 ? text.length : end };
}

/** The line (1-based) where the frontmatter's `phases:` describes phase `id`, or null when it does not. */
export function phaseLine(source: string, id: string): number | null {
  const lines = source.split('\n');
  const start = lines.findIndex((line) => /^phases:[ \t]*(#.*)?\r?$/.test(line));
  if (start < 0) return null;
  let indent: number | null = null;
  for (let i = start + 1; i < lines.length; i++) {
    const line = lines[i]!.replace(/\r$/, '');
    const text = line.trimStart();
    if (!text || text.startsWith('#')) continue;
    const depth = line.length - text.length;
    if (depth === 0) return null;
    indent ??= depth;
    if (depth === indent && (text.startsWith(`${id}:`) || text.startsWith(`'${id}':`) || text.startsWith(`"${id}":`)))
      return i + 1;
  }
  return null;
}
