import { z } from 'zod';
import { GatePolicySchema } from './gate-policy';
import { PhaseToolsSchema, PublishStepSchema, ToolsDeclarationSchema } from './tools';

/** A routing rule: one of five conditions, evaluated in ascending priority; the first match wins. */
export const RouteConditionSchema = z.enum(['contains', 'starts_with', 'ends_with', 'regex', 'always']);
export type RouteCondition = z.infer<typeof RouteConditionSchema>;

export const RoutingRuleSchema = z
  .object({
    condition: RouteConditionSchema,
    match: z.string().max(500).default(''),
    target: z.string().min(1).max(100),
    priority: z.number().int().min(0).max(10000),
  })
  .meta({ id: 'RoutingRule' });
export type RoutingRule = z.infer<typeof RoutingRuleSchema>;

/** Where the rule that chose a route came from: the asset's own routes, or the overrides saved for the phase. */
export const RuleSourceSchema = z
  .enum(['asset', 'override'])
  .meta({ description: "where the rule came from: the asset file's own routes, or the overrides saved for the phase" });
export type RuleSource = z.infer<typeof RuleSourceSchema>;

export const NodeKindSchema = z.enum(['llm', 'gate', 'terminal']);
export type NodeKind = z.infer<typeof NodeKindSchema>;

/** Node ids travel in URLs and name LangGraph nodes, which reserves `__start__` and `__end__`. */
export const NODE_ID_PATTERN = /^[a-z][a-z0-9_-]{0,62}$/;

/** A node id where a request names one (the key of an edit): anything else names no phase. */
export const NodeIdSchema = z.string().regex(NODE_ID_PATTERN, 'must be a node id (lowercase letters, digits, - and _)');

/** A phase as the user sees it; `id` is the node id the API and runtime use. */
export const PhaseSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    kind: NodeKindSchema,
    description: z.string(),
    expected_output: z.string(),
    classification_options: z.array(z.string()),
    approval_question: z.string().optional(),
    required_approval_context: z.array(z.string()),
    routes: z.array(RoutingRuleSchema),
    /** A gate's options; absent on other phases. */
    gate: GatePolicySchema.optional(),
    /** The tools a model phase may call, and its limit of calls; absent: it only writes text. */
    tools: PhaseToolsSchema.optional(),
    /** A phase after a gate that writes the approved text with one tool call instead of calling the model. */
    publish: PublishStepSchema.optional(),
  })
  .meta({ id: 'Phase' });
export type Phase = z.infer<typeof PhaseSchema>;

export const EdgeSchema = z
  .object({
    from: z.string(),
    to: z.string(),
    /** A static condition the graph itself defines, such as `approved` or `rejected`; absent = always. */
    condition: z.string().optional(),
  })
  .meta({ id: 'Edge' });
export type Edge = z.infer<typeof EdgeSchema>;

export const GraphLayoutSchema = z
  .object({
    name: z.string(),
    entry: z.string(),
    nodes: z.array(z.object({ id: z.string(), kind: NodeKindSchema, name: z.string().optional() })),
    edges: z.array(EdgeSchema),
  })
  .meta({ id: 'GraphLayout' });
export type GraphLayout = z.infer<typeof GraphLayoutSchema>;

export const AssetKindSchema = z.enum(['agent', 'command']);
export type AssetKind = z.infer<typeof AssetKindSchema>;

/** What build/build-assets.ts writes for each asset file, and what GET /agents and /commands list. */
export const ManifestSchema = z
  .object({
    kind: AssetKindSchema,
    name: z.string(),
    description: z.string(),
    category: z.string(),
    /** The layout this asset runs: a built-in default or `assets/graphs/<category>.json`. */
    graph: z.string(),
    instructions: z.string(),
    phases: z.array(PhaseSchema),
    /** The MCP servers the asset declares and the policies of its tools. */
    tools: ToolsDeclarationSchema,
    source: z.string(),
  })
  .meta({ id: 'Manifest' });
export type Manifest = z.infer<typeof ManifestSchema>;

export const AssetSummarySchema = z
  .object({
    name: z.string(),
    description: z.string(),
    kind: AssetKindSchema,
    category: z.string(),
    phases: z.array(z.object({ id: z.string(), name: z.string(), kind: NodeKindSchema })),
    origin: z.enum(['built_in', 'stored']).meta({ description: 'shipped with the service, or stored in a project' }),
    version: z.string().meta({ description: "a stored agent's current version number; a built-in's content hash" }),
    project_id: z.string().nullable().meta({ description: 'the project a stored agent belongs to' }),
    shared: z.boolean().meta({ description: "a stored agent offered to every project of its project's organisation" }),
  })
  .meta({ id: 'AssetSummary' });
export type AssetSummary = z.infer<typeof AssetSummarySchema>;
