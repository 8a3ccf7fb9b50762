/** One line of a diff between two texts: kept, added in the newer, or removed from the older. */
export interface DiffLine {
  kind: 'same' | 'added' | 'removed';
  text: string;
  /** The line's number in the older text (1-based); null for an added line. */
  before: number | null;
  /** The line's number in the newer text (1-based); null for a removed line. */
  after: number | null;
}

/** A text's lines, whatever its line ends; a last line end starts no line of its own. */
export function linesOf(text: string): string[] {
  if (text === '') return [];
  const lines = text.split(/\r\n|\r|\n/);
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

/**
 * The lines of `after` against those of `before`, in order: a longest common subsequence of lines is kept, the rest
 * is removed (before's) or added (after's), the removals of a change before its additions. The lines both texts start
 * and end with are set aside first, so that a small change to a long source costs little.
 */
export function lineDiff(before: string, after: string): DiffLine[] {
  const a = linesOf(before);
  const b = linesOf(after);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const midA = a.slice(head, a.length - tail);
  const midB = b.slice(head, b.length - tail);

  // common[i][j]: the length of a longest common subsequence of midA[i..] and midB[j..], in one flat array.
  const width = midB.length + 1;
  const common = new Uint32Array((midA.length + 1) * width);
  for (let i = midA.length - 1; i >= 0; i--) {
    for (let j = midB.length - 1; j >= 0; j--) {
      common[i * width + j] =
        midA[i] === midB[j]
          ? common[(i + 1) * width + j + 1]! + 1
          : Math.max(common[(i + 1) * width + j]!, common[i * width + j + 1]!);
    }
  }

  const out: DiffLine[] = [];
  const same = (i: number, j: number) => out.push({ kind: 'same', text: a[i]!, before: i + 1, after: j + 1 });
  for (let k = 0; k < head; k++) same(k, k);
  let i = 0;
  let j = 0;
  while (i < midA.length || j < midB.length) {
    if (i < midA.length && j < midB.length && midA[i] === midB[j]) {
      same(head + i++, head + j++);
    } else if (j >= midB.length || (i < midA.length && common[(i + 1) * width + j]! >= common[i * width + j + 1]!)) {
      out.push({ kind: 'removed', text: midA[i]!, before: head + i + 1, after: null });
      i++;
    } else {
      out.push({ kind: 'added', text: midB[j]!, before: null, after: head + j + 1 });
      j++;
    }
  }
  for (let k = tail; k > 0; k--) same(a.length - k, b.length - k);
  return out;
}

/** How many lines a diff adds and removes: what its summary says. */
export function diffCounts(diff: DiffLine[]): { added: number; removed: number } {
  return {
    added: diff.filter((line) => line.kind === 'added').length,
    removed: diff.filter((line) => line.kind === 'removed').length,
  };
}

/** Unchanged lines a diff leaves out: `count` of them, between the changes' context. */
export interface DiffGap {
  kind: 'gap';
  count: number;
}

/**
 * The diff as a reader wants it: each change with `context` unchanged lines around it, and the unchanged lines
 * further away folded into gaps. A diff without changes is all one gap.
 */
export function withContext(diff: DiffLine[], context = 3): (DiffLine | DiffGap)[] {
  const near = new Array<boolean>(diff.length).fill(false);
  diff.forEach((line, i) => {
    if (line.kind === 'same') return;
    for (let k = Math.max(0, i - context); k <= Math.min(diff.length - 1, i + context); k++) near[k] = true;
  });
  const out: (DiffLine | DiffGap)[] = [];
  diff.forEach((line, i) => {
    if (near[i]) out.push(line);
    else if (out.at(-1)?.kind === 'gap') (out.at(-1) as DiffGap).count++;
    else out.push({ kind: 'gap', count: 1 });
  });
  return out;
}
