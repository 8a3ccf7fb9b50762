import { z } from 'zod';
import { RoleSchema } from './tenancy';

/** What a gate does when nobody decided it in time: reject, approve, or continue at a named phase (`route`). */
export const GateExpirySchema = z
  .object({
    after_s: z.number().int().positive().meta({ description: 'seconds a gate waits before it expires' }),
    action: z.enum(['reject', 'approve', 'route']),
    target: z.string().nullable().meta({ description: 'the phase a `route` expiry continues at; null otherwise' }),
  })
  .meta({ id: 'GateExpiry' });
export type GateExpiry = z.infer<typeof GateExpirySchema>;

/** Who may decide a gate, how many must approve it, and when it expires (docs/approvals.md#the-gate-options). */
export const GatePolicySchema = z
  .object({
    decide_role: RoleSchema.meta({
      description: "the lowest role on the run's project (held there or inherited) that may decide the gate",
    }),
    approvals: z.number().int().min(1).max(10).meta({ description: 'different people who must approve' }),
    expiry: GateExpirySchema.nullable(),
  })
  .meta({ id: 'GatePolicy' });
export type GatePolicy = z.infer<typeof GatePolicySchema>;

/** A gate without options of its own: one person with the member role decides it, and it waits until they do. */
export const DEFAULT_GATE_POLICY: GatePolicy = { decide_role: 'member', approvals: 1, expiry: null };
