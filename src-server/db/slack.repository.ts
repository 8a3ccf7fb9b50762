import type { Pool } from './pool';

export interface SlackConnectionRow {
  org_id: string;
  team_id: string;
  team_name: string | null;
  app_id: string | null;
  bot_user_id: string | null;
  bot_token_sealed: string;
  signing_secret_sealed: string;
  channel: string;
  connected_by: string;
  connected_at: Date;
}

export interface SlackLinkRow {
  user_id: string;
  team_id: string;
  slack_user_id: string;
  linked_by_self: boolean;
  linked_at: Date;
}

/** A linked person, as a decision through Slack acts: her user and how the link was made. */
export interface LinkedUserRow extends SlackLinkRow {
  name: string | null;
  email: string | null;
}

/**
 * Slack's side of the service (migrations/0007-slack.ts): an organisation's workspace connection (its secrets sealed,
 * never readable here), the channel of each project, the people linked to Slack identities, the message of each stop,
 * and the signatures of interactions already taken.
 */
export function slackRepository(pool: Pool) {
  return {
    async connection(orgId: string): Promise<SlackConnectionRow | undefined> {
      const { rows } = await pool.query<SlackConnectionRow>(`SELECT * FROM svc_slack_connections WHERE org_id = $1`, [
        orgId,
      ]);
      return rows[0];
    },

    /** The connections of a workspace: the one an interaction names by its team and app. */
    async connectionsOfTeam(teamId: string): Promise<SlackConnectionRow[]> {
      const { rows } = await pool.query<SlackConnectionRow>(
        `SELECT * FROM svc_slack_connections WHERE team_id = $1 ORDER BY connected_at`,
        [teamId],
      );
      return rows;
    },

    async connect(row: Omit<SlackConnectionRow, 'connected_at'>): Promise<void> {
      await pool.query(
        `INSERT INTO svc_slack_connections (org_id, team_id, team_name, app_id, bot_user_id, bot_token_sealed,
                                            signing_secret_sealed, channel, connected_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         ON CONFLICT (org_id) DO UPDATE SET team_id = EXCLUDED.team_id, team_name = EXCLUDED.team_name,
           app_id = EXCLUDED.app_id, bot_user_id = EXCLUDED.bot_user_id, bot_token_sealed = EXCLUDED.bot_token_sealed,
           signing_secret_sealed = EXCLUDED.signing_secret_sealed, channel = EXCLUDED.channel,
           connected_by = EXCLUDED.connected_by, connected_at = now()`,
        [
          row.org_id,
          row.team_id,
          row.team_name,
          row.app_id,
          row.bot_user_id,
          row.bot_token_sealed,
          row.signing_secret_sealed,
          row.channel,
          row.connected_by,
        ],
      );
    },

    /** Seals a connection's secrets again (after a key rotation), unless they changed since they were read. */
    async reseal(orgId: string, before: string, botToken: string, signingSecret: string): Promise<void> {
      await pool.query(
        `UPDATE svc_slack_connections SET bot_token_sealed = $3, signing_secret_sealed = $4
          WHERE org_id = $1 AND bot_token_sealed = $2`,
        [orgId, before, botToken, signingSecret],
      );
    },

    async all(): Promise<SlackConnectionRow[]> {
      const { rows } = await pool.query<SlackConnectionRow>(`SELECT * FROM svc_slack_connections`);
      return rows;
    },

    async disconnect(orgId: string): Promise<boolean> {
      const { rowCount } = await pool.query(`DELETE FROM svc_slack_connections WHERE org_id = $1`, [orgId]);
      return (rowCount ?? 0) > 0;
    },

    async setProjectChannel(projectId: string, channel: string | null): Promise<void> {
      if (channel === null) {
        await pool.query(`DELETE FROM svc_slack_project_channels WHERE project_id = $1`, [projectId]);
        return;
      }
      await pool.query(
        `INSERT INTO svc_slack_project_channels (project_id, channel) VALUES ($1, $2)
         ON CONFLICT (project_id) DO UPDATE SET channel = EXCLUDED.channel`,
        [projectId, channel],
      );
    },

    /** project id → channel, for the projects of the organisation that have one of their own. */
    async projectChannels(orgId: string): Promise<Record<string, string>> {
      const { rows } = await pool.query<{ project_id: string; channel: string }>(
        `SELECT c.project_id, c.channel FROM svc_slack_project_channels c
           JOIN svc_projects p ON p.id = c.project_id JOIN svc_teams t ON t.id = p.team_id
          WHERE t.org_id = $1`,
        [orgId],
      );
      return Object.fromEntries(rows.map((r) => [r.project_id, r.channel]));
    },

    /** The channel a project's stops go to: its own, or its organisation's. */
    async channelOfProject(projectId: string): Promise<string | undefined> {
      const { rows } = await pool.query<{ channel: string }>(
        `SELECT COALESCE(pc.channel, c.channel) AS channel
           FROM svc_projects p JOIN svc_teams t ON t.id = p.team_id
           JOIN svc_slack_connections c ON c.org_id = t.org_id
           LEFT JOIN svc_slack_project_channels pc ON pc.project_id = p.id
          WHERE p.id = $1`,
        [projectId],
      );
      return rows[0]?.channel;
    },

    /**
     * Links a Slack identity to a user. A link made by the person herself replaces one made from an email; an
     * identity linked to someone else stays theirs (false).
     */
    async link(userId: string, teamId: string, slackUserId: string, bySelf: boolean): Promise<boolean> {
      const { rowCount } = await pool.query(
        `INSERT INTO svc_slack_links (team_id, slack_user_id, user_id, linked_by_self) VALUES ($1, $2, $3, $4)
         ON CONFLICT (team_id, slack_user_id) DO UPDATE SET linked_by_self = EXCLUDED.linked_by_self,
           linked_at = now()
         WHERE svc_slack_links.user_id = EXCLUDED.user_id`,
        [teamId, slackUserId, userId, bySelf],
      );
      return (rowCount ?? 0) > 0;
    },

    /** Removes the user's links (all, or the one of a workspace); how many went. */
    async unlink(userId: string, teamId?: string): Promise<number> {
      const { rowCount } = await pool.query(
        `DELETE FROM svc_slack_links WHERE user_id = $1 AND ($2::text IS NULL OR team_id = $2)`,
        [userId, teamId ?? null],
      );
      return rowCount ?? 0;
    },

    async linksOf(userId: string): Promise<SlackLinkRow[]> {
      const { rows } = await pool.query<SlackLinkRow>(
        `SELECT * FROM svc_slack_links WHERE user_id = $1 ORDER BY linked_at`,
        [userId],
      );
      return rows;
    },

    async linkedUser(teamId: string, slackUserId: string): Promise<LinkedUserRow | undefined> {
      const { rows } = await pool.query<LinkedUserRow>(
        `SELECT l.*, u.name, u.email FROM svc_slack_links l JOIN svc_users u ON u.id = l.user_id
          WHERE l.team_id = $1 AND l.slack_user_id = $2`,
        [teamId, slackUserId],
      );
      return rows[0];
    },

    /** The one user whose identity provider said this email is hers and verified; none when several have it. */
    async userOfVerifiedEmail(email: string): Promise<{ id: string } | undefined> {
      const { rows } = await pool.query<{ id: string }>(
        `SELECT id FROM svc_users WHERE lower(email) = lower($1) AND email_verified LIMIT 2`,
        [email],
      );
      return rows.length === 1 ? rows[0] : undefined;
    },

    /**
     * Keeps what a stop's message shows of it (while it waits), creating its row on first sight with the channel it
     * goes to. Deliveries of one stop are sent one at a time (stop-deliveries.repository.ts), so one post is made.
     */
    async keepFacts(runId: string, waitSeq: number, channel: string, facts: object): Promise<void> {
      await pool.query(
        `INSERT INTO svc_slack_messages (run_id, wait_seq, channel, shown_as, facts) VALUES ($1, $2, $3, $3, $4::jsonb)
         ON CONFLICT (run_id, wait_seq) DO UPDATE SET facts = EXCLUDED.facts`,
        [runId, waitSeq, channel, JSON.stringify(facts)],
      );
    },

    async posted(runId: string, waitSeq: number, channel: string, ts: string): Promise<void> {
      await pool.query(`UPDATE svc_slack_messages SET channel = $3, ts = $4 WHERE run_id = $1 AND wait_seq = $2`, [
        runId,
        waitSeq,
        channel,
        ts,
      ]);
    },

    async message(
      runId: string,
      waitSeq: number,
    ): Promise<{ channel: string; ts: string | null; facts: unknown } | undefined> {
      const { rows } = await pool.query<{ channel: string; ts: string | null; facts: unknown }>(
        `SELECT channel, ts, facts FROM svc_slack_messages WHERE run_id = $1 AND wait_seq = $2`,
        [runId, waitSeq],
      );
      return rows[0];
    },

    /** Remembers an interaction's signature: false when it was taken before (a replay). */
    async firstSeen(signature: string): Promise<boolean> {
      const { rowCount } = await pool.query(
        `INSERT INTO svc_slack_seen (signature) VALUES ($1) ON CONFLICT DO NOTHING`,
        [signature],
      );
      return (rowCount ?? 0) > 0;
    },

    /** Forgets signatures older than Slack's window (and a margin): an older request is refused by its timestamp. */
    async pruneSeen(): Promise<void> {
      await pool.query(`DELETE FROM svc_slack_seen WHERE seen_at < now() - interval '15 minutes'`);
    },
  };
}

export type SlackRepository = ReturnType<typeof slackRepository>;
