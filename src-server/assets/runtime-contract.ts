import { z } from 'zod';
import { AssetKindSchema, EdgeSchema, PhaseSchema } from '../contracts/assets';

/** The file build/build-assets.ts writes beside the manifests, in the generated folder. */
export const RUNTIME_CONTRACT_FILE = 'runtime-contract.json';

/** What a person deciding a gate is asked and shown, and where each decision leads. */
export const GateContractSchema = z.object({
  node: z.string(),
  question: z.string(),
  /** Node ids whose output the approver must see. */
  required_context: z.array(z.string()),
  approved: z.string(),
  rejected: z.string(),
});
export type GateContract = z.infer<typeof GateContractSchema>;

/**
 * One agent or command as GET /agents/{name}/graph-definition projects it: every phase with its
 * defaults, the static edges (a node without outgoing edges ends the run), and the approval gates.
 */
export const AssetContractSchema = z.object({
  kind: AssetKindSchema,
  graph: z.string(),
  category: z.string(),
  entry: z.string(),
  phases: z.array(PhaseSchema),
  edges: z.array(EdgeSchema),
  gates: z.array(GateContractSchema),
});
export type AssetContract = z.infer<typeof AssetContractSchema>;

export const RuntimeContractSchema = z.object({ assets: z.record(z.string(), AssetContractSchema) });
export type RuntimeContract = z.infer<typeof RuntimeContractSchema>;
