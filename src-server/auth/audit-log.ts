import type { AuditAction } from '../contracts/audit';
import type { Principal } from './principal';

/** A change as the service that made it describes it; who, how and from where are added by the log. */
export interface AuditedChange {
  action: AuditAction;
  /** The scope it belongs to: a project's change is also its organisation's (found by the log when not given). */
  projectId?: string | null;
  orgId?: string | null;
  target: string;
  before?: unknown;
  after?: unknown;
}

/**
 * What a service that makes audited changes needs of the audit log (services/audit.service.ts implements it). Here,
 * beside the principal, so that every layer that changes something (auth/, webhooks/, services/) records the same way.
 */
export interface AuditLog {
  record(principal: Principal, change: AuditedChange): Promise<void>;
}
