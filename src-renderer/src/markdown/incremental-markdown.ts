import { type LinkReferences, markdownParser } from './markdown-parser';

/** Renders one block of an answer, with the link reference definitions of the whole answer. */
export type RenderBlock = (source: string, references: LinkReferences) => string;

/** A part of the answer that text added later can no longer change, and its HTML once rendered. */
interface SettledBlock {
  source: string;
  /** The labels it could use a link reference definition by: it is rendered again when one of theirs changes. */
  labels: ReadonlySet<string>;
  html?: string;
}

/**
 * A markdown answer that grows as it streams, rendered block by block: text that what comes later can no longer
 * change is rendered once and kept, and each update renders only what has grown since the last: the text settled
 * since, as one block, and the last top-level block, which may still grow. The blocks' HTML, joined, is what
 * rendering the whole text at once gives, at every update.
 *
 * A link reference definition is the one thing that reaches across blocks (`[docs]` may come before
 * `[docs]: https://…`): every block is rendered with all the definitions of the text so far, and a block that
 * could use a label is rendered again when that label's definition changes.
 */
export class IncrementalMarkdown {
  private settled: SettledBlock[] = [];
  /** The text that the settled blocks hold, and the definitions in it (the first of a label wins, as markdown's). */
  private settledText = '';
  private settledReferences: LinkReferences = {};
  private references: LinkReferences = {};
  /** How long the last update took to render the last block: the one render that every update repeats (ms). */
  lastBlockMs = 0;

  constructor(private readonly render: RenderBlock) {}

  /** The HTML of each block of `text`: the same strings as before for the blocks that have not changed. */
  update(text: string): readonly string[] {
    const source = normaliseLineEnds(text);
    if (!source.startsWith(this.settledText)) this.forget();
    const unsettled = source.slice(this.settledText.length);
    const cut = settledCut(unsettled);
    if (cut > 0) this.settle(unsettled.slice(0, cut));
    this.settledText = source.slice(0, this.settledText.length + cut);
    const tail = unsettled.slice(cut);

    const references = withDefinitions(this.settledReferences, tail);
    const changed = changedLabels(this.references, references);
    this.references = references;
    for (const block of this.settled) {
      const stale = changed.size > 0 && [...block.labels].some((label) => changed.has(label));
      if (block.html === undefined || stale) block.html = this.render(block.source, references);
    }
    const started = performance.now();
    const last = this.render(tail, references);
    this.lastBlockMs = performance.now() - started;
    return [...this.settled.map((block) => block.html!), last];
  }

  private settle(source: string): void {
    this.settled.push({ source, labels: bracketedLabels(source) });
    this.settledReferences = withDefinitions(this.settledReferences, source);
  }

  /** Another text than the one growing (not the same beginning): nothing kept applies to it. */
  private forget(): void {
    this.settled = [];
    this.settledText = '';
    this.settledReferences = {};
    this.references = {};
  }
}

/** markdown-it reads `\r\n` and `\r` as `\n` too; lines are counted here as it counts them. */
function normaliseLineEnds(text: string): string {
  return text.includes('\r') ? text.replace(/\r\n?/g, '\n') : text;
}

/**
 * How much of `source` text added later can no longer change: up to the start of its last top-level block that
 * follows a blank line, among its complete lines (the last line may still grow into anything). Before a blank line
 * nothing waits for more text (a paragraph, a lazy continuation or a definition's title would), and what spans
 * blank lines (a list, a fence, indented code) has ended when a block starts after it at the top level. Cut there,
 * the two parts render as the whole does.
 */
function settledCut(source: string): number {
  const complete = source.slice(0, source.lastIndexOf('\n') + 1);
  const state = new markdownParser.block.State(complete, markdownParser, {}, []);
  markdownParser.block.tokenize(state, 0, state.lineMax);
  let cut = 0;
  for (const token of state.tokens) {
    const line = token.map?.[0];
    if (token.level === 0 && token.nesting !== -1 && line && state.isEmpty(line - 1)) cut = state.bMarks[line]!;
  }
  return cut;
}

/** `references` with the definitions in `source` added, where their label is not defined yet. */
function withDefinitions(references: LinkReferences, source: string): LinkReferences {
  // A definition is written `[label]: destination`.
  if (!source.includes(']:')) return references;
  const env: { references?: LinkReferences } = {};
  markdownParser.block.parse(source, markdownParser, env, []);
  const added = Object.entries(env.references ?? {}).filter(([label]) => !Object.hasOwn(references, label));
  return added.length ? { ...references, ...Object.fromEntries(added) } : references;
}

/** The labels whose definition changed between `before` and `after` (added, or another destination or title). */
function changedLabels(before: LinkReferences, after: LinkReferences): ReadonlySet<string> {
  if (before === after) return new Set();
  const labels = new Set([...Object.keys(before), ...Object.keys(after)]);
  return new Set([...labels].filter((label) => JSON.stringify(before[label]) !== JSON.stringify(after[label])));
}

/**
 * Every label `source` could use a definition by: what stands between brackets with no bracket inside (a label
 * has none unescaped), as markdown-it compares labels. More than it uses (code, text in brackets), never fewer.
 */
function bracketedLabels(source: string): ReadonlySet<string> {
  const labels = source.matchAll(/\[((?:\\.|[^\\[\]])*)\]/g);
  return new Set([...labels].map((match) => markdownParser.utils.normalizeReference(match[1]!)));
}
