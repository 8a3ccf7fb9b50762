import type { Role } from '../contracts/tenancy';
import type { Pool } from './pool';

export type Recipients = 'deciders' | string[];

export interface RecipientsRow {
  scope_type: 'org' | 'project';
  scope_id: string;
  recipients: Recipients;
  updated_by: string;
  updated_at: Date;
}

/** A decision link as kept: its token's hash only, the stop and round it decides, and the person it decides as. */
export interface EmailLinkRow {
  token_sha256: string;
  run_id: string;
  wait_seq: number;
  round: number;
  /** null: the address is nobody's here, and the mail carries no decision link. */
  user_id: string | null;
  recipient: string;
  expires_at: Date;
  used_at: Date | null;
}

/** A person who may be mailed about a project's stops: her address and her highest role there. */
export interface MailablePerson {
  id: string;
  name: string | null;
  email: string;
  role: Role;
}

/**
 * Mail's side of the service (migrations/0008-email.ts): whom each organisation's or project's stops are mailed to, the
 * people of a project with an address, and the decision links (their tokens' hashes) the mails carry.
 */
export function emailRepository(pool: Pool) {
  return {
    async recipients(scopeType: 'org' | 'project', scopeId: string): Promise<RecipientsRow | undefined> {
      const { rows } = await pool.query<RecipientsRow>(
        `SELECT * FROM svc_email_recipients WHERE scope_type = $1 AND scope_id = $2`,
        [scopeType, scopeId],
      );
      return rows[0];
    },

    async setRecipients(
      scopeType: 'org' | 'project',
      scopeId: string,
      recipients: Recipients | null,
      by: string,
    ): Promise<void> {
      if (recipients === null) {
        await pool.query(`DELETE FROM svc_email_recipients WHERE scope_type = $1 AND scope_id = $2`, [
          scopeType,
          scopeId,
        ]);
        return;
      }
      await pool.query(
        `INSERT INTO svc_email_recipients (scope_type, scope_id, recipients, updated_by) VALUES ($1, $2, $3::jsonb, $4)
         ON CONFLICT (scope_type, scope_id) DO UPDATE SET recipients = EXCLUDED.recipients,
           updated_by = EXCLUDED.updated_by, updated_at = now()`,
        [scopeType, scopeId, JSON.stringify(recipients), by],
      );
    },

    /** The people with an address and a role on the project, its team or its organisation (their highest). */
    async peopleOfProject(projectId: string): Promise<MailablePerson[]> {
      const { rows } = await pool.query<{ id: string; name: string | null; email: string; roles: Role[] }>(
        `SELECT u.id, u.name, u.email, array_agg(m.role) AS roles
           FROM svc_projects p JOIN svc_teams t ON t.id = p.team_id
           JOIN svc_memberships m ON (m.scope_type = 'project' AND m.scope_id = p.id)
                                  OR (m.scope_type = 'team' AND m.scope_id = t.id)
                                  OR (m.scope_type = 'org' AND m.scope_id = t.org_id)
           JOIN svc_users u ON u.id = m.user_id
          WHERE p.id = $1 AND u.email IS NOT NULL
          GROUP BY u.id, u.name, u.email`,
        [projectId],
      );
      const order: Role[] = ['viewer', 'member', 'owner', 'admin'];
      return rows.map((r) => ({
        id: r.id,
        name: r.name,
        email: r.email,
        role: r.roles.reduce((a, b) => (order.indexOf(b) > order.indexOf(a) ? b : a)),
      }));
    },

    /** The users an address belongs to (one, to decide as her). */
    async usersOfEmail(email: string): Promise<{ id: string; name: string | null }[]> {
      const { rows } = await pool.query<{ id: string; name: string | null }>(
        `SELECT id, name FROM svc_users WHERE lower(email) = lower($1) LIMIT 2`,
        [email],
      );
      return rows;
    },

    /** The addresses a stop's mail was sent to (so a retry mails only those it has not). */
    async mailedAt(runId: string, waitSeq: number): Promise<string[]> {
      const { rows } = await pool.query<{ recipient: string }>(
        `SELECT recipient FROM svc_email_links WHERE run_id = $1 AND wait_seq = $2 AND sent_at IS NOT NULL`,
        [runId, waitSeq],
      );
      return rows.map((r) => r.recipient);
    },

    async addLink(link: Omit<EmailLinkRow, 'used_at'>): Promise<void> {
      await pool.query(
        `INSERT INTO svc_email_links (token_sha256, run_id, wait_seq, round, user_id, recipient, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [link.token_sha256, link.run_id, link.wait_seq, link.round, link.user_id, link.recipient, link.expires_at],
      );
    },

    async linkSent(tokenSha256: string): Promise<void> {
      await pool.query(`UPDATE svc_email_links SET sent_at = now() WHERE token_sha256 = $1`, [tokenSha256]);
    },

    /** A link that was not sent (the mail failed): nobody holds its token. */
    async dropLink(tokenSha256: string): Promise<void> {
      await pool.query(`DELETE FROM svc_email_links WHERE token_sha256 = $1 AND sent_at IS NULL`, [tokenSha256]);
    },

    /**
     * A link by its token, whether or not its mail is noted as sent yet: only its mail holds the token, and the click
     * may come before the note (a busy server, or one stopped between sending and noting). A mail that failed dropped
     * its link.
     */
    async link(tokenSha256: string): Promise<EmailLinkRow | undefined> {
      const { rows } = await pool.query<EmailLinkRow & { wait_seq: string }>(
        `SELECT token_sha256, run_id, wait_seq, round, user_id, recipient, expires_at, used_at
           FROM svc_email_links WHERE token_sha256 = $1`,
        [tokenSha256],
      );
      return rows[0] ? { ...rows[0], wait_seq: Number(rows[0].wait_seq) } : undefined;
    },

    /** A use that decided nothing because the service could not (not because of the stop): the link works again. */
    async unuseLink(tokenSha256: string): Promise<void> {
      await pool.query(`UPDATE svc_email_links SET used_at = NULL WHERE token_sha256 = $1`, [tokenSha256]);
    },

    /** Uses a link: true for the one request that does, false when it was used before. */
    async useLink(tokenSha256: string): Promise<boolean> {
      const { rowCount } = await pool.query(
        `UPDATE svc_email_links SET used_at = now() WHERE token_sha256 = $1 AND used_at IS NULL`,
        [tokenSha256],
      );
      return (rowCount ?? 0) > 0;
    },
  };
}

export type EmailRepository = ReturnType<typeof emailRepository>;
