import type { Budget, BudgetPeriod } from '../contracts/budgets';
import { withTransaction, type Pool } from './pool';

import type { OwnedScope } from '../contracts/tenancy';

export interface BudgetWrite {
  scope: OwnedScope;
  userId: string | null;
  period: BudgetPeriod;
  amountUsd: number | null;
  tokens: number | null;
  warnAt: number;
  timeZone: string;
  setBy: string;
}

/** A budget with what its current period has spent: what the API answers, and what a run is checked against. */
export interface BudgetState extends Budget {
  /** The scope's name, for the words of a warning or a refusal. */
  scope_name: string;
}

interface BudgetRow {
  id: string;
  scope_type: 'org' | 'project';
  scope_id: string;
  scope_name: string | null;
  user_id: string | null;
  period: BudgetPeriod;
  amount_usd: string | null;
  tokens: string | null;
  warn_at: number;
  time_zone: string;
  set_at: Date;
  period_start: Date;
  period_end: Date;
  spent_usd: number;
  spent_tokens: string;
}

/**
 * Each budget with its current period (the day or month of its time zone, begun in that zone) and what the calls of
 * that period spent in its scope (a project, or every project of an organisation), one person's only when it names
 * one. Counted from svc_model_calls (svc_model_calls_by_project: one range per project): what was spent before the
 * budget was set counts too.
 */
const WITH_SPEND = `
  SELECT b.id, b.scope_type, b.scope_id, COALESCE(p.name, o.name) AS scope_name, b.user_id, b.period,
         b.amount_usd::text, b.tokens::text, b.warn_at, b.time_zone, b.set_at,
         w.period_start, w.period_end, s.spent_usd, s.spent_tokens::text
    FROM budgets b
    LEFT JOIN svc_projects p ON b.scope_type = 'project' AND p.id = b.scope_id
    LEFT JOIN svc_orgs o ON b.scope_type = 'org' AND o.id = b.scope_id
    CROSS JOIN LATERAL (
      SELECT date_trunc(b.period, now() AT TIME ZONE b.time_zone) AT TIME ZONE b.time_zone AS period_start,
             (date_trunc(b.period, now() AT TIME ZONE b.time_zone) + ('1 ' || b.period)::interval)
               AT TIME ZONE b.time_zone AS period_end
    ) w
    CROSS JOIN LATERAL (
      SELECT COALESCE(sum(c.cost_usd), 0)::float8 AS spent_usd,
             COALESCE(sum(COALESCE(c.input_tokens, 0) + COALESCE(c.output_tokens, 0)), 0)::bigint AS spent_tokens
        FROM svc_model_calls c
       WHERE c.created_at >= w.period_start
         AND (b.user_id IS NULL OR c.user_id = b.user_id)
         AND c.project_id IN (
               SELECT b.scope_id WHERE b.scope_type = 'project'
               UNION ALL
               SELECT pp.id FROM svc_projects pp JOIN svc_teams tt ON tt.id = pp.team_id
                WHERE b.scope_type = 'org' AND tt.org_id = b.scope_id)
    ) s`;

function toState(row: BudgetRow): BudgetState {
  const amount = row.amount_usd === null ? null : Number(row.amount_usd);
  const tokens = row.tokens === null ? null : Number(row.tokens);
  const spentTokens = Number(row.spent_tokens);
  const fraction = Math.max(amount === null ? 0 : row.spent_usd / amount, tokens === null ? 0 : spentTokens / tokens);
  return {
    id: row.id,
    scope: { type: row.scope_type, id: row.scope_id },
    scope_name: row.scope_name ?? row.scope_id,
    user_id: row.user_id,
    period: row.period,
    amount_usd: amount,
    tokens,
    warn_at: row.warn_at,
    time_zone: row.time_zone,
    set_at: row.set_at.toISOString(),
    period_start: row.period_start.toISOString(),
    period_end: row.period_end.toISOString(),
    spent_usd: row.spent_usd,
    spent_tokens: spentTokens,
    status: fraction >= 1 ? 'exceeded' : fraction >= row.warn_at ? 'warning' : 'ok',
  };
}

/** Budgets (svc_budgets), what their periods spent, and the one warning of each period (svc_budget_warnings). */
export function budgetsRepository(pool: Pool) {
  return {
    /** Sets the budget of the scope, period and user (replacing the one there was); answers it as it is now. */
    async put(write: BudgetWrite): Promise<BudgetState> {
      const { rows } = await pool.query<BudgetRow>(
        `WITH budgets AS (
           INSERT INTO svc_budgets (id, scope_type, scope_id, user_id, period, amount_usd, tokens, warn_at, time_zone,
                                    set_by)
           VALUES (gen_random_uuid(), $1, $2, $3, $4, $5, $6, $7, $8, $9)
           ON CONFLICT (scope_type, scope_id, period, COALESCE(user_id, '00000000-0000-0000-0000-000000000000'::uuid))
           DO UPDATE SET amount_usd = EXCLUDED.amount_usd, tokens = EXCLUDED.tokens, warn_at = EXCLUDED.warn_at,
                         time_zone = EXCLUDED.time_zone, set_by = EXCLUDED.set_by, set_at = now()
           RETURNING *
         ) ${WITH_SPEND}`,
        [
          write.scope.type,
          write.scope.id,
          write.userId,
          write.period,
          write.amountUsd,
          write.tokens,
          write.warnAt,
          write.timeZone,
          write.setBy,
        ],
      );
      return toState(rows[0]!);
    },

    async get(id: string): Promise<BudgetState | undefined> {
      const { rows } = await pool.query<BudgetRow>(
        `WITH budgets AS (SELECT * FROM svc_budgets WHERE id = $1) ${WITH_SPEND}`,
        [id],
      );
      return rows[0] && toState(rows[0]);
    },

    /** The scope's budgets; an organisation's include those of its projects when `withProjects`. */
    async ofScope(scope: OwnedScope, withProjects = false): Promise<BudgetState[]> {
      const { rows } = await pool.query<BudgetRow>(
        `WITH budgets AS (
           SELECT * FROM svc_budgets
            WHERE (scope_type = $1 AND scope_id = $2)
               OR ($3 AND scope_type = 'project' AND scope_id IN (
                     SELECT p.id FROM svc_projects p JOIN svc_teams t ON t.id = p.team_id WHERE t.org_id = $2))
         ) ${WITH_SPEND} ORDER BY b.scope_type, b.period, b.user_id NULLS FIRST`,
        [scope.type, scope.id, withProjects],
      );
      return rows.map(toState);
    },

    /**
     * Every budget a run of the project counts against: the project's and its organisation's, for everyone or for the
     * run's user (`userId`, or the one who started `runId`).
     */
    async applying(projectId: string, who: { userId: string | null } | { runId: string }): Promise<BudgetState[]> {
      const { rows } = await pool.query<BudgetRow>(
        `WITH budgets AS (
           SELECT bb.* FROM svc_budgets bb
            WHERE ((bb.scope_type = 'project' AND bb.scope_id = $1)
                OR (bb.scope_type = 'org' AND bb.scope_id = (
                      SELECT t.org_id FROM svc_projects p JOIN svc_teams t ON t.id = p.team_id WHERE p.id = $1)))
              AND (bb.user_id IS NULL
                   OR bb.user_id = COALESCE($2::uuid, (SELECT r.created_by FROM svc_runs r WHERE r.id = $3::uuid)))
         ) ${WITH_SPEND}`,
        [projectId, 'userId' in who ? who.userId : null, 'runId' in who ? who.runId : null],
      );
      return rows.map(toState);
    },

    /** Whether any budget exists at all: most installations have none, and then nothing is counted. */
    async any(): Promise<boolean> {
      const { rows } = await pool.query(`SELECT 1 FROM svc_budgets LIMIT 1`);
      return rows.length > 0;
    },

    async remove(id: string): Promise<boolean> {
      const { rowCount } = await pool.query(`DELETE FROM svc_budgets WHERE id = $1`, [id]);
      return (rowCount ?? 0) > 0;
    },

    /**
     * Records that the budget reached `level` in its current period, and queues its webhook event (`budget.warning`,
     * `budget.exceeded`) for the project's and its organisation's webhooks, in one transaction: true the first time
     * only, whichever process sees it first.
     */
    async reached(budget: BudgetState, level: 'warning' | 'exceeded', projectId: string): Promise<boolean> {
      return withTransaction(pool, async (client) => {
        const { rowCount } = await client.query(
          `INSERT INTO svc_budget_warnings (budget_id, period_start, level) VALUES ($1, $2, $3)
           ON CONFLICT DO NOTHING`,
          [budget.id, budget.period_start, level],
        );
        if (!rowCount) return false;
        const { scope_name: _name, ...data } = budget;
        await client.query(`SELECT svc_webhook_enqueue($1, $2, $3)`, [
          `budget.${level}`,
          projectId,
          JSON.stringify({ ...data, scope_name: budget.scope_name, project_id: projectId }),
        ]);
        return true;
      });
    },
  };
}

export type BudgetsRepository = ReturnType<typeof budgetsRepository>;
