import { checkName, CheckSchema, cutText, type Check } from '@contracts/datasets';

/** The kinds of check, as the check editor offers them. */
export const CHECK_KINDS: Record<Check['kind'], string> = {
  contains: 'Contains',
  not_contains: 'Does not contain',
  regex: 'Matches a pattern',
  json_schema: 'Valid JSON (schema)',
  label: 'Classified as',
  judge: 'Judged by a model',
};

/**
 * What a check checks, in the words results use for it (contracts/datasets.ts checkName, its given name aside); a
 * judge's chip also shows the start of its rubric.
 */
export function checkWords(check: Check): string {
  const { name: _given, ...unnamed } = check;
  const words = checkName(unnamed as Check);
  return check.kind === 'judge' ? `${words}: ${cutText(check.rubric, 60)}` : words;
}

/** A check as its chip reads: its own name with what it checks, or what it checks alone. */
export const checkLabel = (check: Check) => (check.name ? `${check.name}: ${checkWords(check)}` : checkWords(check));

/**
 * A check as the editor holds it while it is typed: every kind's fields at once (changing the kind keeps what was
 * typed), the JSON schema as text.
 */
export interface CheckDraft {
  kind: Check['kind'];
  name: string;
  text: string;
  ignoreCase: boolean;
  pattern: string;
  flags: string;
  schema: string;
  label: string;
  phase: string;
  model: string;
  rubric: string;
}

export function blankDraft(kind: Check['kind'] = 'contains', model = ''): CheckDraft {
  return {
    kind,
    name: '',
    text: '',
    ignoreCase: false,
    pattern: '',
    flags: '',
    schema: '{\n  "type": "object"\n}',
    label: '',
    phase: '',
    model,
    rubric: '',
  };
}

export function toDraft(check: Check): CheckDraft {
  const draft = { ...blankDraft(check.kind), name: check.name ?? '' };
  switch (check.kind) {
    case 'contains':
    case 'not_contains':
      return { ...draft, text: check.text, ignoreCase: check.ignore_case ?? false };
    case 'regex':
      return { ...draft, pattern: check.pattern, flags: check.flags ?? '' };
    case 'json_schema':
      return { ...draft, schema: JSON.stringify(check.schema, null, 2) };
    case 'label':
      return { ...draft, label: check.label, phase: check.phase ?? '' };
    case 'judge':
      return { ...draft, model: check.model, rubric: check.rubric };
  }
}

/** A field of a draft a problem is about, for the editor to point at it. */
export type DraftField = 'name' | 'text' | 'pattern' | 'flags' | 'schema' | 'label' | 'phase' | 'model' | 'rubric';
export interface DraftProblem {
  field: DraftField;
  message: string;
}

/** The check a draft stands for, or what is wrong with it (as the server would say it, from the same schema). */
export function fromDraft(draft: CheckDraft): { check: Check } | { problems: DraftProblem[] } {
  const name = draft.name.trim() || undefined;
  let candidate: unknown;
  switch (draft.kind) {
    case 'contains':
    case 'not_contains':
      candidate = { kind: draft.kind, name, text: draft.text, ...(draft.ignoreCase && { ignore_case: true }) };
      break;
    case 'regex':
      candidate = { kind: draft.kind, name, pattern: draft.pattern, ...(draft.flags && { flags: draft.flags }) };
      break;
    case 'json_schema': {
      let schema: unknown;
      try {
        schema = JSON.parse(draft.schema);
      } catch {
        return { problems: [{ field: 'schema', message: 'is not JSON' }] };
      }
      if (typeof schema !== 'object' || schema === null || Array.isArray(schema))
        return { problems: [{ field: 'schema', message: 'must be a JSON object' }] };
      candidate = { kind: draft.kind, name, schema };
      break;
    }
    case 'label':
      candidate = { kind: draft.kind, name, label: draft.label, ...(draft.phase.trim() && { phase: draft.phase }) };
      break;
    case 'judge':
      candidate = { kind: draft.kind, name, model: draft.model, rubric: draft.rubric };
      break;
  }
  const parsed = CheckSchema.safeParse(candidate);
  if (parsed.success) return { check: parsed.data };
  return {
    problems: parsed.error.issues.map((issue) => ({
      field: (issue.path[0] === 'ignore_case' ? 'text' : String(issue.path[0] ?? 'name')) as DraftField,
      message: issue.code === 'too_small' ? 'must not be empty' : issue.message,
    })),
  };
}

/** Every draft's check, or the problems of each draft by its place (empty for a draft that is right). */
export function fromDrafts(drafts: CheckDraft[]): { checks: Check[] } | { problems: DraftProblem[][] } {
  const answers = drafts.map(fromDraft);
  if (answers.every((a) => 'check' in a)) return { checks: answers.map((a) => (a as { check: Check }).check) };
  return { problems: answers.map((a) => ('problems' in a ? a.problems : [])) };
}
