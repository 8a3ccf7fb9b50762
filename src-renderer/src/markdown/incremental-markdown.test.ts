import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IncrementalMarkdown } from './incremental-markdown';
import { type LinkReferences, markdownParser } from './markdown-parser';

/**
 * markdown-it's HTML, before DOMPurify (which needs a browser) cleans it: what cutting an answer into blocks could
 * change. Sanitising each block's HTML, whole elements, gives the same as sanitising them joined.
 */
const renderBlock = (source: string, references: LinkReferences) =>
  markdownParser.render(source, { references: { ...references } });
const renderWhole = (text: string) => markdownParser.render(text);

/** A text cut into pieces of `size` characters, as a stream may cut it. */
const pieces = (text: string, size: number) =>
  Array.from({ length: Math.ceil(text.length / size) }, (_, i) => text.slice(i * size, (i + 1) * size));

/** A text cut as a model's tokens cut it: a word with the spaces or line ends before it. */
const tokens = (text: string) => text.match(/\s*\S+|\s+/g) ?? [];

/**
 * Feeds `chunks` one by one, checking after each that the blocks joined are the whole text rendered at once.
 * Answers how many blocks the text was cut into.
 */
function expectSameAsWhole(chunks: string[]): number {
  const markdown = new IncrementalMarkdown(renderBlock);
  let text = '';
  let blocks: readonly string[] = [];
  for (const chunk of chunks) {
    text += chunk;
    blocks = markdown.update(text);
    expect(blocks.join(''), JSON.stringify(text)).toBe(renderWhole(text));
  }
  return blocks.length;
}

const SAMPLES: Record<string, string> = {
  headings: '# One\n\nText under one.\n## Two\nSetext one\n===\n\nSetext two\n---\n\n### Three ###\n',
  'a list with blank lines between its items':
    '- first\n\n- second\n\n\n- third\n\nAfter the list.\n\n1. one\n2. two\n',
  'nested lists': '- a\n  - a1\n  - a2\n\n    a2 goes on\n- b\n  1. b1\n\n  2. b2\n\n7. seven\n8. eight\n',
  'fenced code with blank lines inside':
    'Before.\n\n```ts\nconst a = 1;\n\n\nconst b = 2;\n```\n\n~~~python\ndef f():\n\n    return 1\n~~~\n\nAfter.\n',
  'indented code with blank lines inside': 'Text.\n\n    code line\n\n\n    more code\n\nText again.\n',
  'block quotes': '> quoted\nlazy line\n\n> second quote\n>\n> its second paragraph\n\n> > nested\n\nplain\n',
  tables: '| file | lines |\n|---|--:|\n| a.ts | 1 |\n| b.ts | 2 |\n\nNot | a table\n\n| x |\n|---|\n',
  'link references used before they are defined':
    'See [the docs][docs] and [Guide].\n\n- also [docs]\n\n[docs]: https://example.com/docs "Docs"\n\n[guide]:\n  https://example.com/guide\n  \'The\nguide\'\n\n[docs]: https://example.com/second-wins-not\n',
  'html-looking text':
    '<div onclick="x()">not html</div>\n\n<script>alert(1)</script>\n\nInline <b>bold?</b> &amp; &copy; <https://example.com> www.example.com\n',
  'emphasis and breaks across lines':
    'A *long\nemphasis* and `code\nspan`  \nhard break\\\nand **strong\n\nnot closed**\n',
  'a fence left open': 'Text.\n\n```js\nlet open = true;\n\nstill code\n',
  'a list interrupted, then a paragraph': '- a\n- b\nlazy\n\nc\n\n---\n* * *\n+ plus\n\n+ loose\n',
  'items after blank lines, their marker cut': '1. one\n\n2. two\n\n10. ten\n\n- dash\n\n* star\n\n3) paren\n',
  'tabs and odd spacing': '-\tone\n\n\t\tcode?\n\n   # indented heading\n\n    # code\n',
  'images and links': '![alt](https://example.com/a.png) [x](https://example.com "t") [bad](javascript:alert(1))\n',
};

describe('a streamed answer rendered block by block is the answer rendered whole', () => {
  for (const [name, sample] of Object.entries(SAMPLES)) {
    it(`${name}: after every token and every cut of a few characters`, () => {
      expectSameAsWhole(tokens(sample));
      for (const size of [1, 2, 3, 7]) expectSameAsWhole(pieces(sample, size));
    });
  }

  it('all the samples as one answer, token by token', () => {
    expectSameAsWhole(tokens(Object.values(SAMPLES).join('\n')));
  });

  it('Windows line ends, cut into blocks as the same text with \\n', () => {
    const text = Object.values(SAMPLES).join('\n');
    const blocks = expectSameAsWhole(pieces(text, 3));
    expect(blocks).toBeGreaterThan(30);
    expect(expectSameAsWhole(pieces(text.replace(/\n/g, '\r\n'), 3))).toBe(blocks);
  });

  it('any text made of markdown lines, cut anywhere', () => {
    const line = fc.constantFrom(
      ...[
        '',
        '',
        ' ',
        'text',
        'more *text',
        'end* of it',
        '- item',
        '  - nested',
        '    indented',
        '1. one',
        '3) three',
      ],
      ...['> quote', '>', '```', '```ts', '~~~', '# heading', '===', '---', '***', '| a | b |', '|---|---|'],
      ...['[ref]: /url', '"title"', "'open title", "end'", '[ref]', '[x][ref]', '[ref]:', '<div>', '\t- tab', '  lazy'],
      ...['2. two', '10. ten', '* star', '+ plus'],
      // Lines that make sense together: a definition whose title goes on, items after a blank line.
      ...["[ref]: /url\n'a title\nthat goes on'", '[ref]:\n/url\n"title"', '1. one\n\n2. two', '- a\n\n  b'],
    );
    const cuts = fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 8 });
    fc.assert(
      fc.property(fc.array(line, { maxLength: 24 }), cuts, (lines, sizes) => {
        const text = lines.join('\n');
        const chunks: string[] = [];
        for (let at = 0, i = 0; at < text.length; at += sizes[i++ % sizes.length]!) {
          chunks.push(text.slice(at, at + sizes[i % sizes.length]!));
        }
        expectSameAsWhole(chunks);
      }),
      { numRuns: 1000 },
    );
  });

  it('another text than the one growing is rendered as itself', () => {
    const markdown = new IncrementalMarkdown(renderBlock);
    markdown.update('# First answer\n\nIts text.\n\nMore.\n');
    const other = '- another\n\n- answer\n';
    expect(markdown.update(other).join('')).toBe(renderWhole(other));
  });
});

describe('each update renders only what changed', () => {
  /** A long answer: many paragraphs, lists and code blocks. */
  const section = (i: number) =>
    `## Part ${i}\n\nParagraph ${i} explains *one* thing in a few words, with \`code\`.\n\n` +
    `- point ${i}.1\n- point ${i}.2\n\n\`\`\`ts\nconst part${i} = ${i};\n\nexport default part${i};\n\`\`\`\n\n`;
  const answer = Array.from({ length: 80 }, (_, i) => section(i)).join('');

  it('a block is rendered once it is complete, and an update renders only the block still growing', () => {
    const rendered: string[][] = [];
    const markdown = new IncrementalMarkdown((source, references) => {
      rendered.at(-1)!.push(source);
      return renderBlock(source, references);
    });
    let text = '';
    for (const token of tokens(answer)) {
      text += token;
      rendered.push([]);
      markdown.update(text);
    }
    expect(markdown.update(answer).join('')).toBe(renderWhole(answer));
    const largestBlock = Math.max(
      ...section(79)
        .split('\n\n')
        .map((block) => block.length + 2),
    );
    const perUpdate = rendered.map((sources) => sources.join('').length);
    // The answer is ~9,000 characters; no update renders more than its growing block and one just completed.
    expect(answer.length).toBeGreaterThan(8000);
    expect(Math.max(...perUpdate)).toBeLessThanOrEqual(2 * largestBlock);
    // Every block but the last is rendered as a whole once, never again.
    const heading = rendered.flat().filter((source) => source === '## Part 3\n\n');
    expect(heading).toHaveLength(1);
  });

  it('an answer given whole is rendered in two calls: what is settled, and its last block', () => {
    const rendered: string[] = [];
    const markdown = new IncrementalMarkdown((source, references) => {
      rendered.push(source);
      return renderBlock(source, references);
    });
    expect(markdown.update(answer).join('')).toBe(renderWhole(answer));
    expect(rendered).toEqual([expect.any(String), '```ts\nconst part79 = 79;\n\nexport default part79;\n```\n\n']);
    expect(rendered.join('')).toBe(answer);
  });

  it('a definition arriving renders again only the blocks that could use its label', () => {
    const rendered: string[] = [];
    const markdown = new IncrementalMarkdown((source, references) => {
      rendered.push(source);
      return renderBlock(source, references);
    });
    const before = 'Read [the guide][guide].\n\nNo link here.\n\nA [note] in brackets.\n\nThe end.\n\n';
    let text = '';
    let first: readonly string[] = [];
    for (const token of tokens(before)) first = markdown.update((text += token));
    expect(first[0]).toBe('<p>Read [the guide][guide].</p>\n');
    rendered.length = 0;
    const after = `${before}[Guide]: https://example.com/guide\n`;
    const blocks = markdown.update(after);
    expect(blocks.join('')).toBe(renderWhole(after));
    expect(blocks[0]).toBe('<p>Read <a href="https://example.com/guide">the guide</a>.</p>\n');
    // The first block, and the last, which grew by the definition; the others are handed back as they were.
    expect(rendered).toEqual(['Read [the guide][guide].\n\n', 'The end.\n\n[Guide]: https://example.com/guide\n']);
    expect(blocks.slice(1, 3)).toEqual(first.slice(1, 3));
    expect(blocks[1]).toBe(first[1]);
  });
});
