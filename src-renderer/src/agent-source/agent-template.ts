/** The longest name an agent may have (docs/agents.md, "The frontmatter"). */
export const MAX_NAME_LENGTH = 63;

/** What a name may be: lowercase letters, digits and dashes, not starting with a dash. */
export const NAME_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** A new agent's text: the template of docs/agents.md, "A template to copy". */
export const BLANK_AGENT = `---
name: my-agent
description: One sentence on what the agent does and for whom.
category: general
phases:
  intake:
    name: Read the request
    description: >-
      What the model does in this phase, step by step.
    expected_output: The sections the answer has.
  analysis:
    name: Work it out
    description: >-
      What the model does in this phase.
    expected_output: The result a person approves at the gate.
  gate:
    approval_question: Go on with this result?
    required_approval_context: [analysis]
  output:
    name: Answer
    description: >-
      What the model does with the approved result.
    expected_output: The final answer.
  cancelled:
    description: The result was rejected; nothing more happens.
---

You are … (who the model is, for whom it works, and what it must never do).

How you work:

- …
`;

/** A copy's name: the original's with `-copy`, shortened where that would pass the longest name. */
export function copyName(name: string): string {
  const suffix = '-copy';
  return `${name.slice(0, MAX_NAME_LENGTH - suffix.length).replace(/-+$/, '')}${suffix}`;
}

const FENCE = /^---[ \t]*\r?$/;
const NAME_LINE = /^name:[ \t]*(.*?)[ \t]*(#.*)?$/;

/**
 * Where the frontmatter's lines are: between the first line (`---`, after a byte order mark) and the next `---`
 * line. Null when the text has no frontmatter.
 */
function frontmatter(lines: string[]): { start: number; end: number } | null {
  if (!FENCE.test((lines[0] ?? '').replace(/^\uFEFF/, ''))) return null;
  const end = lines.findIndex((line, i) => i > 0 && FENCE.test(line));
  return end < 0 ? null : { start: 1, end };
}

/** The name the frontmatter gives at its top level (`name: x`, quoted or not), or null. */
export function nameOf(source: string): string | null {
  const lines = source.split('\n');
  const block = frontmatter(lines);
  if (!block) return null;
  for (let i = block.start; i < block.end; i++) {
    const match = NAME_LINE.exec(lines[i]!.replace(/\r$/, ''));
    if (match) return match[1]!.replace(/^(['"])(.*)\1$/, '$2') || null;
  }
  return null;
}

/**
 * The source with its top-level `name:` set to `name`: that line is rewritten in place (keeping its line end and a
 * comment after it), or added as the frontmatter's first line when it has none; nested `name:`s (a phase's) stay.
 * A text without frontmatter is given one holding only the name.
 */
export function withName(source: string, name: string): string {
  const lines = source.split('\n');
  const block = frontmatter(lines);
  if (!block) return `---\nname: ${name}\n---\n${source}`;
  for (let i = block.start; i < block.end; i++) {
    const line = lines[i]!;
    const cr = line.endsWith('\r') ? '\r' : '';
    const match = NAME_LINE.exec(line.replace(/\r$/, ''));
    if (!match) continue;
    lines[i] = `name: ${name}${match[2] ? ` ${match[2]}` : ''}${cr}`;
    return lines.join('\n');
  }
  const cr = lines[0]!.endsWith('\r') ? '\r' : '';
  lines.splice(1, 0, `name: ${name}${cr}`);
  return lines.join('\n');
}

/** The file an agent's source is exported to. */
export const fileNameOf = (name: string | null) => `${name && NAME_PATTERN.test(name) ? name : 'agent'}.md`;
