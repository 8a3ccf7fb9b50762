import { z } from 'zod';
import { GateDecisionKindSchema, NodeStatusSchema, RunStatusSchema } from './runs';
import { ToolReplaySchema } from './tools';
import { RunUsageSchema } from './usage';

/** What `compareRun` runs the original's input on (docs/compare.md): another model, another version, or both. */
export const CompareRequestSchema = z
  .object({
    model: z.string().trim().min(1).max(200).optional().meta({
      description: "the comparison's model (`provider:model`); the original run's when absent",
    }),
    agent_version: z
      .string()
      .trim()
      .min(1)
      .max(100)
      .optional()
      .meta({
        description:
          "the version of the original's agent to run, as runs show it (a stored agent's number, a built-in's hash " +
          'prefix); the version the original ran when absent',
      }),
  })
  .default({})
  .meta({ id: 'CompareRequest' });
export type CompareRequest = z.infer<typeof CompareRequestSchema>;

/** One phase of one side of a comparison. */
export const ComparedPhaseSchema = z
  .object({
    node: z.string(),
    status: NodeStatusSchema,
    output: z.string(),
    duration_ms: z.number().nullable().meta({ description: 'how long the phase ran; null while it runs' }),
    first_token_ms: z
      .number()
      .nullable()
      .meta({ description: 'from entering the phase to its first answer token; null when it streamed none' }),
    output_tokens: z.number().int().nullable(),
  })
  .meta({ id: 'ComparedPhase' });

/** A tool call of one side, with what a comparison did with it. */
export const ComparedToolCallSchema = z
  .object({
    node: z.string(),
    tool: z.string(),
    arguments_sha256: z.string(),
    policy: z.enum(['allow', 'ask', 'granted', 'covered', 'deny']),
    replay: ToolReplaySchema.nullable().meta({
      description: "the comparison's: the original's recorded answer, run, or not run; null on the original's side",
    }),
    is_error: z.boolean().nullable().meta({ description: 'null: the call has no result (yet)' }),
    result: z.string().nullable(),
  })
  .meta({ id: 'ComparedToolCall' });

/** A gate's decision on one side. */
export const ComparedDecisionSchema = z
  .object({
    gate: z.string(),
    kind: GateDecisionKindSchema,
    reason: z.string().nullable(),
    deciders: z.array(z.string()),
    in_original: z
      .object({ run_id: z.uuid(), edited: z.boolean() })
      .nullable()
      .meta({
        description:
          "the comparison took the original's decision (`edited`: approved there with an edit, not applied here); " +
          'null: a person decided',
      }),
  })
  .meta({ id: 'ComparedDecision' });
export type ComparedDecision = z.infer<typeof ComparedDecisionSchema>;

/** One side of a comparison: a run, its phases, tool calls, decisions, spend and timings. */
export const ComparedRunSchema = z
  .object({
    run_id: z.uuid(),
    thread_id: z.uuid(),
    agent: z.string(),
    agent_version: z.string().nullable(),
    model: z.string().nullable(),
    status: RunStatusSchema,
    output: z.string().nullable(),
    run_ms: z
      .number()
      .meta({ description: 'how long its phases ran, added up (time waiting at a stop for a person left out)' }),
    first_token_ms: z.number().nullable().meta({
      description: 'from the start of its first phase to its first answer token; null when it streamed none',
    }),
    usage: RunUsageSchema.nullable(),
    phases: z.array(ComparedPhaseSchema).meta({ description: 'in the order the run entered them' }),
    tool_calls: z.array(ComparedToolCallSchema),
    decisions: z.array(ComparedDecisionSchema),
  })
  .meta({ id: 'ComparedRun' });
export type ComparedRun = z.infer<typeof ComparedRunSchema>;

/** A comparison beside the run it compares (`getComparison`). */
export const ComparisonSchema = z
  .object({
    original: ComparedRunSchema,
    comparison: ComparedRunSchema,
  })
  .meta({ id: 'Comparison' });
export type Comparison = z.infer<typeof ComparisonSchema>;
