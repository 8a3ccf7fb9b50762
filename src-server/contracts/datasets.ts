import { z } from 'zod';
import { UuidSchema } from './common';

/** A check's optional name: what tables and comparisons call it (else a name made from what it checks). */
const CheckNameSchema = z.string().trim().min(1).max(100).optional().meta({
  description: 'what the results call it; by default a name made from what it checks, e.g. `contains "LGTM"`',
});

/**
 * How an output is scored (docs/compare.md#checks): each check answers pass or fail with a reason a person can read.
 * A judge asks a model of the caller's choice, with a rubric.
 */
export const CheckSchema = z
  .discriminatedUnion('kind', [
    z.object({
      kind: z.literal('contains'),
      name: CheckNameSchema,
      text: z.string().min(1).max(2000),
      ignore_case: z.boolean().optional().meta({ description: 'compare without regard to case (default false)' }),
    }),
    z.object({
      kind: z.literal('not_contains'),
      name: CheckNameSchema,
      text: z.string().min(1).max(2000),
      ignore_case: z.boolean().optional(),
    }),
    z.object({
      kind: z.literal('regex'),
      name: CheckNameSchema,
      pattern: z
        .string()
        .min(1)
        .max(1000)
        .refine(
          (pattern) => {
            try {
              new RegExp(pattern, 'u');
              return true;
            } catch {
              return false;
            }
          },
          { message: 'is not a valid regular expression' },
        )
        .meta({ description: 'a JavaScript regular expression (Unicode mode); passes when it matches the output' }),
      flags: z
        .string()
        .regex(/^[ims]{0,3}$/, 'may hold only i, m and s')
        .optional(),
    }),
    z.object({
      kind: z.literal('json_schema'),
      name: CheckNameSchema,
      schema: z
        .record(z.string(), z.unknown())
        .meta({ description: 'a JSON Schema (draft 2020-12) the output, read as JSON, must be valid against' }),
    }),
    z.object({
      kind: z.literal('label'),
      name: CheckNameSchema,
      label: z.string().trim().min(1).max(200),
      phase: z.string().trim().min(1).max(100).optional().meta({
        description: "the phase whose classification is read (its output's first line); the run's output when absent",
      }),
    }),
    z.object({
      kind: z.literal('judge'),
      name: CheckNameSchema,
      model: z.string().trim().min(1).max(200).meta({ description: 'the judging model (`provider:model`)' }),
      rubric: z.string().trim().min(1).max(8000).meta({ description: 'what a passing output does, for the judge' }),
    }),
  ])
  .meta({ id: 'Check' });
export type Check = z.infer<typeof CheckSchema>;

export const ChecksSchema = z.array(CheckSchema).max(20);

/** At most `max` characters, cut between code points: a lone surrogate would make a score unstorable as JSON. */
export function cutText(text: string, max: number): string {
  const chars = [...text.slice(0, 2 * max + 2)];
  return chars.length > max ? `${chars.slice(0, max - 1).join('')}…` : chars.join('');
}

/** A text in quotes on one line, at most 60 characters of it. */
export const quoteText = (text: string): string => `"${cutText(text.replace(/\s+/g, ' '), 60)}"`;

/**
 * A check's name: the one it was given, else what it checks. Scores, totals and comparisons go by it, and the studio
 * shows checks by it, so a check reads the same everywhere.
 */
export function checkName(check: Check): string {
  if (check.name) return check.name;
  const anyCase = 'ignore_case' in check && check.ignore_case ? ' (any case)' : '';
  switch (check.kind) {
    case 'contains':
      return `contains ${quoteText(check.text)}${anyCase}`;
    case 'not_contains':
      return `does not contain ${quoteText(check.text)}${anyCase}`;
    case 'regex':
      return `matches /${cutText(check.pattern, 60)}/${check.flags ?? ''}`;
    case 'json_schema':
      return 'valid JSON against the schema';
    case 'label':
      return `label is ${quoteText(check.label)}${check.phase ? ` in ${check.phase}` : ''}`;
    case 'judge':
      return `judge (${check.model})`;
  }
}

export const CheckKindSchema = z.enum(['contains', 'not_contains', 'regex', 'json_schema', 'label', 'judge']);

/** One check's verdict on one output. */
export const ScoreSchema = z
  .object({
    check: z.string().meta({ description: "the check's name" }),
    kind: CheckKindSchema,
    pass: z.boolean(),
    reason: z.string().meta({ description: 'why, in words (a judge gives its own)' }),
  })
  .meta({ id: 'Score' });
export type Score = z.infer<typeof ScoreSchema>;

export const NewDatasetSchema = z
  .object({
    name: z.string().trim().min(1, 'must not be empty').max(200),
    description: z.string().trim().max(2000).optional(),
  })
  .meta({ id: 'NewDataset' });
export type NewDataset = z.infer<typeof NewDatasetSchema>;

export const DatasetSchema = z
  .object({
    id: z.uuid(),
    project_id: z.uuid(),
    name: z.string(),
    description: z.string().nullable(),
    item_count: z.number().int(),
    created_by: z.string().meta({ description: 'who made it' }),
    created_at: z.string(),
  })
  .meta({ id: 'Dataset' });
export type Dataset = z.infer<typeof DatasetSchema>;

export const DatasetItemSchema = z
  .object({
    id: z.uuid(),
    dataset_id: z.uuid(),
    position: z.number().int().meta({ description: 'its place in the dataset, from 1' }),
    message: z.string(),
    project_path: z.string().nullable(),
    expected: z.string().nullable().meta({ description: 'the expected output, for checks and judges to compare with' }),
    checks: z.array(CheckSchema).meta({ description: "this item's own checks, scored beside the experiment's" }),
    source_run_id: z.uuid().nullable().meta({
      description: 'the run it was made from (which may since be gone: the item keeps its own copy); null: typed',
    }),
    recorded: z.object({ tool_calls: z.number().int(), decisions: z.number().int() }).meta({
      description:
        "what the item keeps of its run's record: tool calls' answers an experiment gives again, and gates' " +
        'decisions it takes again (both 0 for an item typed by hand)',
    }),
    created_at: z.string(),
  })
  .meta({ id: 'DatasetItem' });
export type DatasetItem = z.infer<typeof DatasetItemSchema>;

export const DatasetDetailSchema = DatasetSchema.extend({ items: z.array(DatasetItemSchema) }).meta({
  id: 'DatasetDetail',
});
export type DatasetDetail = z.infer<typeof DatasetDetailSchema>;

export const NewDatasetItemSchema = z
  .object({
    run_id: UuidSchema.optional().meta({
      description:
        'a run to copy: its message, folder, record and final output (as the expected output, unless `expected` is given)',
    }),
    message: z.string().trim().min(1, 'must not be empty').max(100_000).optional().meta({
      description: 'the input of an item typed by hand (instead of `run_id`)',
    }),
    project_path: z.string().trim().min(1).max(2000).optional(),
    expected: z.string().max(100_000).optional(),
    checks: ChecksSchema.optional(),
  })
  .meta({ id: 'NewDatasetItem', description: 'either `run_id`, or `message` (with `project_path` if any)' });
export type NewDatasetItem = z.infer<typeof NewDatasetItemSchema>;

export const DatasetItemPatchSchema = z
  .object({
    message: z.string().trim().min(1, 'must not be empty').max(100_000).optional(),
    expected: z.string().max(100_000).nullable().optional(),
    checks: ChecksSchema.optional(),
  })
  .meta({ id: 'DatasetItemPatch' });
export type DatasetItemPatch = z.infer<typeof DatasetItemPatchSchema>;

export const DatasetListSchema = z.object({ datasets: z.array(DatasetSchema) }).meta({ id: 'DatasetList' });
