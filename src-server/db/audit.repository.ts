import type { AuditAction, AuditEvent, AuditVia } from '../contracts/audit';
import type { Pool } from './pool';

export interface AuditWrite {
  actorId: string | null;
  actorName: string;
  via: AuditVia;
  ip: string | null;
  orgId: string | null;
  projectId: string | null;
  action: AuditAction;
  target: string;
  before: unknown;
  after: unknown;
}

export interface AuditFilter {
  /** An organisation's events: its own and its projects'. */
  orgId?: string;
  projectId?: string;
  action?: AuditAction;
  actorId?: string;
  from?: Date;
  to?: Date;
  beforeId?: string;
  limit: number;
}

interface AuditRow {
  id: string;
  at: Date;
  actor_id: string | null;
  actor_name: string;
  via: AuditVia;
  ip: string | null;
  org_id: string | null;
  project_id: string | null;
  action: AuditAction;
  target: string;
  before: unknown;
  after: unknown;
}

const toEvent = (row: AuditRow): AuditEvent => ({
  id: row.id,
  at: row.at.toISOString(),
  actor: { id: row.actor_id, name: row.actor_name },
  via: row.via,
  ip: row.ip,
  org_id: row.org_id,
  project_id: row.project_id,
  action: row.action,
  target: row.target,
  before: row.before ?? null,
  after: row.after ?? null,
});

/** The audit log (svc_audit_events): rows are only ever added; the database refuses anything else. */
export function auditRepository(pool: Pool) {
  return {
    async append(event: AuditWrite): Promise<void> {
      await pool.query(
        `INSERT INTO svc_audit_events (actor_id, actor_name, via, ip, org_id, project_id, action, target, before, after)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        [
          event.actorId,
          event.actorName,
          event.via,
          event.ip,
          event.orgId,
          event.projectId,
          event.action,
          event.target,
          event.before === undefined || event.before === null ? null : JSON.stringify(event.before),
          event.after === undefined || event.after === null ? null : JSON.stringify(event.after),
        ],
      );
    },

    /** A page, newest first, and whether there is more past it. */
    async page(filter: AuditFilter): Promise<{ events: AuditEvent[]; more: boolean }> {
      const where: string[] = [];
      const params: unknown[] = [];
      const add = (sql: (p: string) => string, value: unknown) => {
        params.push(value);
        where.push(sql(`$${params.length}`));
      };
      if (filter.projectId) add((p) => `project_id = ${p}`, filter.projectId);
      if (filter.orgId) add((p) => `org_id = ${p}`, filter.orgId);
      if (filter.action) add((p) => `action = ${p}`, filter.action);
      if (filter.actorId) add((p) => `actor_id = ${p}`, filter.actorId);
      if (filter.from) add((p) => `at >= ${p}`, filter.from);
      if (filter.to) add((p) => `at < ${p}`, filter.to);
      if (filter.beforeId) add((p) => `id < ${p}`, filter.beforeId);
      params.push(filter.limit + 1);
      const { rows } = await pool.query<AuditRow>(
        `SELECT id::text, at, actor_id, actor_name, via, ip, org_id, project_id, action, target, before, after
           FROM svc_audit_events ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
          ORDER BY svc_audit_events.id DESC LIMIT $${params.length}`,
        params,
      );
      return { events: rows.slice(0, filter.limit).map(toEvent), more: rows.length > filter.limit };
    },
  };
}

export type AuditRepository = ReturnType<typeof auditRepository>;
