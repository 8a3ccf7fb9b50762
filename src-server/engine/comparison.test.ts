import { describe, expect, it } from 'vitest';
import { ComparedRun } from './comparison';

const original = new ComparedRun('run-1', {
  calls: [
    { tool: 'project.read_file', argumentsSha256: 'a', result: { text: 'first answer', isError: false } },
    { tool: 'project.read_file', argumentsSha256: 'a', result: { text: 'second answer', isError: false } },
    { tool: 'project.write_file', argumentsSha256: 'w', result: { text: 'wrote it', isError: false } },
  ],
  decisions: [
    { type: 'gate_responded', node: 'gate', to: 'analysis', response: 'shorter', reason: null, deciders: ['Ada'] },
    { type: 'gate_edited', node: 'gate', reason: 'typo', edits: { analysis: 'fixed' }, deciders: ['Ada'] },
  ],
});

describe("a comparison's view of the run it compares", () => {
  it("answers a call the original made with the original's first answer, whatever the tool", () => {
    const readFile = { name: 'project.read_file', readOnly: true };
    expect(original.replayOf(readFile, 'a', 'allow')).toEqual({
      replay: 'recorded',
      answer: { text: 'first answer', is_error: false },
    });
    expect(original.replayOf({ name: 'project.write_file', readOnly: false }, 'w', 'ask')).toMatchObject({
      replay: 'recorded',
    });
  });

  it('runs a new call only when its tool is read-only and asks nobody', () => {
    expect(original.replayOf({ name: 'project.read_file', readOnly: true }, 'b', 'allow')).toEqual({ replay: 'ran' });
    expect(original.replayOf({ name: 'project.read_file', readOnly: true }, 'b', 'ask')).toEqual({ replay: 'not_run' });
    expect(original.replayOf({ name: 'project.write_file', readOnly: false }, 'x', 'allow')).toEqual({
      replay: 'not_run',
    });
  });

  it("takes the original's decision at each visit of a gate, an edit as an approval that says so, then none", () => {
    expect(original.decisionAt('gate', 1)).toEqual({
      decision: { kind: 'respond', reason: null, deciders: ['Ada'], response: 'shorter', to: 'analysis' },
      inOriginal: { run_id: 'run-1', edited: false },
    });
    expect(original.decisionAt('gate', 2)).toEqual({
      decision: { kind: 'approve', reason: 'typo', deciders: ['Ada'] },
      inOriginal: { run_id: 'run-1', edited: true },
    });
    // The original never came back a third time: the comparison stops there for a person.
    expect(original.decisionAt('gate', 3)).toBeUndefined();
    expect(original.decisionAt('other-gate', 1)).toBeUndefined();
  });
});
