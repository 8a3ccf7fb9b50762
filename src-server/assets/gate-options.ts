import { z } from 'zod';
import type { GraphLayout } from '../contracts/assets';
import { DEFAULT_GATE_POLICY, type GateExpiry, type GatePolicy } from '../contracts/gate-policy';
import { RoleSchema } from '../contracts/tenancy';
import { fail, type AssetSource, type FieldPath } from './asset-error';

/** A gate's `expires_after`: a number of seconds, minutes, hours or days. */
const DURATION = /^([1-9][0-9]{0,6})(s|m|h|d)$/;
const DURATION_S = { s: 1, m: 60, h: 3600, d: 86400 } as const;

/** A duration as an asset writes it: a number of seconds, or `90s`, `30m`, `48h`, `2d`. */
export const DurationSchema = z.union([
  z.number().int().positive(),
  z.string().regex(DURATION, 'must be a duration such as 90s, 30m, 48h or 2d'),
]);

export function durationSeconds(value: number | string): number {
  if (typeof value === 'number') return value;
  const [, amount, unit] = DURATION.exec(value)!;
  return Number(amount) * DURATION_S[unit as keyof typeof DURATION_S];
}

/**
 * A gate's options as an asset writes them (docs/approvals.md#the-gate-options): at a gate phase, and at a tool
 * policy that asks, whose question is a gate of its own.
 */
export const GATE_OPTION_FIELDS = {
  decide_role: RoleSchema.optional(),
  approvals: z.number().int().min(1).max(10).optional(),
  expires_after: DurationSchema.optional(),
  on_expiry: z.string().min(1).optional(),
};
export type GateOptions = z.infer<z.ZodObject<typeof GATE_OPTION_FIELDS>>;
export const GATE_OPTION_NAMES = Object.keys(GATE_OPTION_FIELDS) as (keyof GateOptions)[];

/**
 * Who decides, how many approve, and what an expiry does. `on_expiry` is reject or approve, or, at a gate of
 * `layout`, the id of an llm phase to continue at; a tool's ask (no layout) has no phase to continue at.
 */
export function gatePolicy(
  source: AssetSource,
  at: FieldPath,
  given: GateOptions,
  layout: GraphLayout | null,
): GatePolicy {
  if (given.on_expiry !== undefined && given.expires_after === undefined) {
    fail(source, [...at, 'on_expiry'], 'needs expires_after: a gate without it never expires');
  }
  let expiry: GateExpiry | null = null;
  if (given.expires_after !== undefined) {
    const onExpiry = given.on_expiry ?? 'reject';
    const action = onExpiry === 'reject' || onExpiry === 'approve' ? onExpiry : 'route';
    if (action === 'route') {
      if (!layout)
        fail(source, [...at, 'on_expiry'], `"${onExpiry}" is not reject or approve: a tool has no phase to go on at`);
      if (layout.nodes.find((n) => n.id === onExpiry)?.kind !== 'llm')
        fail(
          source,
          [...at, 'on_expiry'],
          `"${onExpiry}" is not reject, approve or an llm node of graph "${layout.name}"`,
        );
    }
    expiry = { after_s: durationSeconds(given.expires_after), action, target: action === 'route' ? onExpiry : null };
  }
  return {
    decide_role: given.decide_role ?? DEFAULT_GATE_POLICY.decide_role,
    approvals: given.approvals ?? DEFAULT_GATE_POLICY.approvals,
    expiry,
  };
}
