import { z } from 'zod';
import { AssetKindSchema, GraphLayoutSchema, NodeKindSchema } from './assets';
import { UuidSchema } from './common';

/** The longest source an agent may have (UTF-8 bytes): the compiler reads it at run time, from whoever wrote it. */
export const MAX_AGENT_SOURCE_BYTES = 64 * 1024;

/** One problem in an agent's source, at its line (1-based, in the whole text) and field. */
export const SourceProblemSchema = z
  .object({
    line: z.number().int().nullable(),
    field: z.string().meta({ description: 'the field as written in YAML: `phases.analysis.routes[0].target`' }),
    message: z.string(),
  })
  .meta({ id: 'SourceProblem' });
export type SourceProblem = z.infer<typeof SourceProblemSchema>;

// Characters, not bytes: the compiler counts the bytes and says so at the source's line 1.
const SourceSchema = z
  .string()
  .min(1, 'is empty')
  .max(MAX_AGENT_SOURCE_BYTES, `is longer than ${MAX_AGENT_SOURCE_BYTES} characters`)
  .meta({ description: "the asset file's text: a --- YAML frontmatter --- and the prompt below it (docs/agents.md)" });

export const ValidateAgentRequestSchema = z.object({ source: SourceSchema }).strict().meta({ id: 'ValidateAgent' });

export const SaveAgentRequestSchema = z
  .object({
    source: SourceSchema,
    note: z.string().max(500).default('').meta({ description: 'what changed, shown in the history' }),
  })
  .strict()
  .meta({ id: 'SaveAgent' });
export type SaveAgentRequest = z.infer<typeof SaveAgentRequestSchema>;

export const ShareAgentRequestSchema = z.object({ shared: z.boolean() }).strict().meta({ id: 'ShareAgent' });

/** What the compiler made of a source: its problems, or the graph it would run. */
export const AgentValidationSchema = z
  .object({
    valid: z.boolean(),
    problems: z.array(SourceProblemSchema),
    name: z.string().nullable(),
    kind: AssetKindSchema.nullable(),
    /** The layout it runs and its phases as compiled: what the studio draws while one types. */
    graph: z
      .object({
        layout: GraphLayoutSchema,
        phases: z.array(z.object({ id: z.string(), name: z.string(), kind: NodeKindSchema })),
      })
      .nullable(),
  })
  .meta({ id: 'AgentValidation' });
export type AgentValidation = z.infer<typeof AgentValidationSchema>;

/** Where an agent comes from: shipped with the service (read-only), or stored in a project. */
export const AgentOriginSchema = z.enum(['built_in', 'stored']);

/** An agent or command with its current source: what the editor opens. */
export const AgentDetailSchema = z
  .object({
    name: z.string(),
    kind: AssetKindSchema,
    description: z.string(),
    category: z.string(),
    origin: AgentOriginSchema,
    /** The project it belongs to (stored agents), else null. */
    project_id: UuidSchema.nullable(),
    /** Offered to every project of its organisation (stored agents only). */
    shared: z.boolean(),
    /** The current version: a number for a stored agent, the compiled manifest's content hash for a built-in. */
    version: z.string(),
    source: z
      .string()
      .nullable()
      .meta({ description: "the file's text; null for a built-in whose file is not shipped" }),
    updated_at: z.string().nullable(),
    updated_by: z.string().nullable(),
  })
  .meta({ id: 'AgentDetail' });
export type AgentDetail = z.infer<typeof AgentDetailSchema>;

export const AgentVersionSchema = z
  .object({
    version: z.number().int(),
    note: z.string(),
    created_by: z.string().nullable().meta({ description: 'the name of who saved it' }),
    created_at: z.string(),
    current: z.boolean(),
  })
  .meta({ id: 'AgentVersion' });
export type AgentVersion = z.infer<typeof AgentVersionSchema>;

export const AgentVersionDetailSchema = AgentVersionSchema.extend({ source: z.string() }).meta({
  id: 'AgentVersionDetail',
});
export type AgentVersionDetail = z.infer<typeof AgentVersionDetailSchema>;

/** A try of an unsaved source: a run flagged as a draft, followed as any run. */
export const TryAgentRequestSchema = z
  .object({
    source: SourceSchema,
    message: z.string().min(1).max(100_000),
    model: z.string().min(1).max(200).optional(),
    project_path: z.string().min(1).max(4096).optional(),
  })
  .strict()
  .meta({ id: 'TryAgent' });
export type TryAgentRequest = z.infer<typeof TryAgentRequestSchema>;
