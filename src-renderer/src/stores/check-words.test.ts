import { describe, expect, it } from 'vitest';
import { blankDraft, checkLabel, fromDraft, fromDrafts, toDraft } from './check-words';

describe('the check editor’s drafts', () => {
  it('says what a check checks, with its name when it has one', () => {
    expect(checkLabel({ kind: 'contains', text: 'LGTM' })).toBe('contains "LGTM"');
    expect(checkLabel({ kind: 'not_contains', text: 'TODO', ignore_case: true })).toBe(
      'does not contain "TODO" (any case)',
    );
    expect(checkLabel({ kind: 'regex', pattern: '^ok', flags: 'i', name: 'starts ok' })).toBe(
      'starts ok: matches /^ok/i',
    );
    expect(checkLabel({ kind: 'judge', model: 'ollama:llama3.2', rubric: 'Polite.' })).toBe(
      'judge (ollama:llama3.2): Polite.',
    );
    // As results name it: the same words in the items' chips and in an experiment's scores.
    expect(checkLabel({ kind: 'label', label: 'approve', phase: 'analysis' })).toBe('label is "approve" in analysis');
  });

  it('turns a draft into the check the server takes, and back', () => {
    const draft = { ...blankDraft('contains'), text: 'approve', ignoreCase: true, name: ' ' };
    expect(fromDraft(draft)).toEqual({ check: { kind: 'contains', text: 'approve', ignore_case: true } });
    const judge = { kind: 'judge' as const, model: 'ollama:fake-model', rubric: 'Names the risk.' };
    expect(fromDraft(toDraft(judge))).toEqual({ check: judge });
    const schema = { kind: 'json_schema' as const, schema: { type: 'object', required: ['verdict'] } };
    expect(fromDraft(toDraft(schema))).toEqual({ check: schema });
  });

  it('says what is wrong with a draft, by its field', () => {
    expect(fromDraft(blankDraft('contains'))).toEqual({ problems: [{ field: 'text', message: 'must not be empty' }] });
    expect(fromDraft({ ...blankDraft('regex'), pattern: '(' })).toEqual({
      problems: [{ field: 'pattern', message: 'is not a valid regular expression' }],
    });
    expect(fromDraft({ ...blankDraft('json_schema'), schema: '{' })).toEqual({
      problems: [{ field: 'schema', message: 'is not JSON' }],
    });
    const both = fromDrafts([{ ...blankDraft('contains'), text: 'ok' }, blankDraft('judge')]);
    expect('problems' in both && both.problems.map((p) => p.map((q) => q.field))).toEqual([[], ['model', 'rubric']]);
  });
});
