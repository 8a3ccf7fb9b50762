import { describe, expect, it } from 'vitest';
import { BLANK_AGENT, copyName, fileNameOf, nameOf, withName } from './agent-template';

const REVIEW = `---
name: change-review # its name
description: Reviews a change.
phases:
  intake:
    name: Read the change
---

You review.
`;

describe('copyName', () => {
  it('adds -copy', () => {
    expect(copyName('change-review')).toBe('change-review-copy');
  });

  it('keeps a copy of a long name within 63 characters, without a double dash', () => {
    const long = `${'a'.repeat(57)}-bcdef`;
    expect(copyName(long)).toBe(`${'a'.repeat(57)}-copy`);
    expect(copyName('x'.repeat(63))).toHaveLength(63);
  });
});

describe('nameOf', () => {
  it('reads the top-level name, not a phase’s', () => {
    expect(nameOf(REVIEW)).toBe('change-review');
    expect(nameOf(REVIEW.replace('name: change-review # its name\n', ''))).toBeNull();
  });

  it('reads a quoted name and one after a byte order mark', () => {
    expect(nameOf('\uFEFF---\r\nname: "quoted"\r\n---\r\nbody')).toBe('quoted');
  });

  it('is null without frontmatter', () => {
    expect(nameOf('name: loose\nbody')).toBeNull();
    expect(nameOf('---\nname: unclosed\n')).toBeNull();
  });

  it('reads the template’s name', () => {
    expect(nameOf(BLANK_AGENT)).toBe('my-agent');
  });
});

describe('withName', () => {
  it('renames in place, keeping the comment and every other line', () => {
    const copy = withName(REVIEW, copyName('change-review'));
    expect(copy).toBe(REVIEW.replace('name: change-review # its name', 'name: change-review-copy # its name'));
    expect(copy).toContain('    name: Read the change');
    expect(nameOf(copy)).toBe('change-review-copy');
  });

  it('keeps Windows line ends', () => {
    expect(withName('---\r\nname: a\r\n---\r\nbody\r\n', 'b')).toBe('---\r\nname: b\r\n---\r\nbody\r\n');
  });

  it('adds a name to a frontmatter that has none', () => {
    expect(withName('---\ndescription: d\n---\nbody', 'new')).toBe('---\nname: new\ndescription: d\n---\nbody');
  });

  it('gives a text without frontmatter one with the name', () => {
    expect(withName('just a prompt', 'new')).toBe('---\nname: new\n---\njust a prompt');
  });
});

describe('fileNameOf', () => {
  it('names the file after the agent, or a plain name when it has none that is valid', () => {
    expect(fileNameOf('change-review-copy')).toBe('change-review-copy.md');
    expect(fileNameOf(null)).toBe('agent.md');
    expect(fileNameOf('../etc')).toBe('agent.md');
  });
});
