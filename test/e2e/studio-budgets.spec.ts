import AxeBuilder from '@axe-core/playwright';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Page } from '@playwright/test';
import type { AuditPage } from '../../src-server/contracts/audit';
import type { Budget } from '../../src-server/contracts/budgets';
import type { RunDetail } from '../../src-server/contracts/runs';
import { DEFAULT_ORG_ID, DEFAULT_TEAM_ID, type Scope } from '../../src-server/contracts/tenancy';
import { formatCost, formatCount } from '../../src-renderer/src/stores/usage-figures';
import { api, completeRun, expect, fromHeader, openStudio, screenshotPath, startRun, test } from './studio.fixtures';

/**
 * Budgets, secrets and the audit log in the studio (docs/operations.md#budgets, docs/tools.md#secrets, docs/audit.md),
 * in a project of its own (the e2e database is shared: a spent budget must limit no other spec's runs). A daily budget
 * set through the API that two runs of the priced stand-in (`fake-model`, global-setup.ts) take past its warning
 * level: the banner says so above the studio, and the Usage view's bar shows the spend, its percentage and the status
 * in words. A monthly budget set and removed from the view's form; a secret set in Settings, listed by name and never
 * shown; and the audit log with those changes, filtered by kind.
 */
const WCAG_21_AA = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];

async function violations(page: Page, selector?: string): Promise<string[]> {
  const builder = new AxeBuilder({ page }).withTags(WCAG_21_AA);
  const { violations: found } = await (selector ? builder.include(selector) : builder).analyze();
  return found.flatMap((v) => v.nodes.map((n) => `${v.id}: ${n.target.join(' ')}: ${n.failureSummary ?? ''}`));
}

async function json<T>(res: Response, status = 200): Promise<T> {
  expect(res.status, await res.clone().text()).toBe(status);
  return (await res.json()) as T;
}

const budgetsOf = async (projectId: string) =>
  (await json<{ budgets: Budget[] }>(await api(`/projects/${projectId}/budgets`))).budgets;

test('a budget past its warning level: the banner, the Usage bars; a secret by name only; the audit log', async ({
  page,
}) => {
  test.setTimeout(180_000);
  const marker = randomUUID().slice(0, 8);
  const project = await json<Scope>(
    await api('/projects', { method: 'POST', json: { name: `Budgets ${marker}`, parent_id: DEFAULT_TEAM_ID } }),
    201,
  );
  const secretName = `E2E_TRACKER_TOKEN_${marker.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
  const secretValue = `never-shown-${marker}`;
  const message = `Summarise the budget loader ${marker}`;
  const answer = `The loader counts what each call costs. ${marker}`;
  try {
    await page.setViewportSize({ width: 1440, height: 1000 });
    await openStudio(page, 'repo-summary');
    await page.getByTestId('scope-org').selectOption(DEFAULT_ORG_ID);
    await page.getByTestId('scope-project').selectOption(project.id);
    await expect(page.getByTestId('scope-project')).toHaveValue(project.id);

    // A first run on the priced stand-in: what one costs, in money and tokens.
    const first = (await completeRun(page, message, answer))!;
    const firstUsage = (await json<RunDetail>(await api(`/runs/${first}`))).usage!;
    expect(firstUsage.cost_usd).toBeGreaterThan(0);
    const perRun = firstUsage.cost_usd!;
    const tokensPerRun = firstUsage.input_tokens + firstUsage.output_tokens;

    // A daily budget that the second, identical run takes to 88% of its money (warning at 80%); tokens far from it.
    await json<Budget>(
      await api(`/projects/${project.id}/budget`, {
        method: 'PUT',
        json: { period: 'day', amount_usd: (2 * perRun) / 0.88, tokens: tokensPerRun * 20, warn_at: 0.8 },
      }),
    );
    const [before] = await budgetsOf(project.id);
    expect(before!.status).toBe('ok');
    await expect(page.getByTestId('budget-banner')).toHaveCount(0);

    await completeRun(page, `${message} (2)`, answer);
    const [budget] = await budgetsOf(project.id);
    expect(budget!.status).toBe('warning');
    const percent = Math.floor((budget!.spent_usd / budget!.amount_usd!) * 100);
    expect(percent).toBeGreaterThanOrEqual(80);
    expect(percent).toBeLessThan(100);

    // The run's end reads the budgets again: the banner, a status (not an alert) at the warning level.
    const banner = page.getByTestId('budget-banner');
    await expect(banner).toBeVisible();
    await expect(banner).toHaveAttribute('role', 'status');
    await expect(banner).toHaveAttribute('data-status', 'warning');
    await expect(banner).toContainText('Budget warning:');
    await expect(banner).toContainText(`Daily budget of project “Budgets ${marker}”`);
    await expect(banner).toContainText(`${formatCost(budget!.spent_usd)} of ${formatCost(budget!.amount_usd)}`);
    expect(await violations(page, '[data-testid="budget-banner"]'), 'violations on the banner').toEqual([]);
    await page.screenshot({ path: screenshotPath('budget-banner') });

    // The Usage view: the budget's bars, its status in words, when it starts again.
    await fromHeader(page, 'usage-open');
    const section = page.getByTestId('usage-budgets');
    await expect(section).toBeVisible();
    const shown = section.locator('[data-testid="budget"][data-scope="project"][data-period="day"]');
    await expect(shown).toHaveAttribute('data-status', 'warning');
    await expect(shown.getByTestId('budget-status')).toHaveText(/Status: warning/);
    const money = shown.getByTestId('budget-bar-money');
    await expect(money).toHaveAttribute('role', 'meter');
    await expect(money).toHaveAttribute('aria-valuenow', String(percent));
    const moneyText = `${formatCost(budget!.spent_usd)} of ${formatCost(budget!.amount_usd)} this day · ${percent}%`;
    await expect(shown.getByTestId('budget-text-money')).toHaveText(moneyText);
    await expect(money).toHaveAttribute('aria-valuetext', moneyText);
    await expect(money).toHaveAccessibleName(`Daily budget of project “Budgets ${marker}” Money`);
    const tokenPercent = Math.floor((budget!.spent_tokens / budget!.tokens!) * 100);
    await expect(shown.getByTestId('budget-text-tokens')).toHaveText(
      `${formatCount(budget!.spent_tokens)} of ${formatCount(budget!.tokens!)} tokens this day · ${tokenPercent}%`,
    );
    await expect(shown.getByTestId('budget-bar-tokens')).toHaveAttribute('aria-valuenow', String(tokenPercent));
    await expect(shown.getByTestId('budget-period-end')).toHaveAttribute('datetime', budget!.period_end);
    await expect(shown).toContainText('starts again');
    expect(await violations(page), 'violations on the Usage view with its budgets').toEqual([]);
    await section.screenshot({ path: path.resolve(import.meta.dirname, '../../test-results/usage-budget.png') });

    // The form: a monthly token budget of the project, set, then removed after a question.
    const form = section.getByTestId('budget-form');
    await form.getByLabel('Period').selectOption('month');
    await expect(form.getByLabel('Amount (US dollars)')).toHaveValue('');
    await form.getByTestId('budget-save').click();
    await expect(form.getByText('Give an amount in US dollars, tokens, or both.')).toBeVisible();
    await expect(form.getByLabel('Amount (US dollars)')).toHaveAttribute('aria-invalid', 'true');
    await form.getByLabel('Tokens').fill('5000000');
    await form.getByTestId('budget-save').click();
    await expect(form.getByRole('status')).toHaveText('Saved');
    const monthly = section.locator('[data-testid="budget"][data-scope="project"][data-period="month"]');
    await expect(monthly).toHaveAttribute('data-status', 'ok');
    await expect(monthly.getByTestId('budget-status')).toHaveText(/Status: ok/);
    await expect(monthly.getByTestId('budget-bar-money')).toHaveCount(0);
    await expect(monthly.getByTestId('budget-text-tokens')).toContainText('of 5,000,000 tokens this month');
    expect((await budgetsOf(project.id)).map((b) => b.period).sort()).toEqual(['day', 'month']);
    await monthly.getByTestId('budget-remove').click();
    const question = page.locator('[data-testid="confirm-dialog"][open]');
    await expect(question).toBeVisible();
    await expect(question.getByTestId('confirm-cancel')).toBeFocused();
    await question.getByTestId('confirm-ok').click();
    await expect(monthly).toHaveCount(0);
    await expect(section.getByRole('heading', { name: 'Budgets', exact: true })).toBeFocused();
    expect((await budgetsOf(project.id)).map((b) => b.period)).toEqual(['day']);
    await page.getByTestId('usage-close').click();

    // Dismissed, the banner stays away for the session.
    await banner.getByTestId('budget-banner-dismiss').click();
    await expect(banner).toHaveCount(0);

    // Settings: a project secret, set with a password field that is emptied, listed by its name only.
    await fromHeader(page, 'settings-open');
    const settings = page.getByRole('dialog', { name: 'Settings' });
    const secrets = settings.getByRole('region', { name: `Secrets of Budgets ${marker}` });
    await expect(secrets).toBeVisible();
    await expect(secrets.getByTestId('secrets-empty')).toBeVisible();
    const valueInput = secrets.getByLabel('Value');
    await expect(valueInput).toHaveAttribute('type', 'password');
    await secrets.getByLabel('Name').fill(secretName);
    await valueInput.fill(secretValue);
    await secrets.getByTestId('secret-save').click();
    await expect(secrets.getByRole('status')).toHaveText(`${secretName} set`);
    await expect(valueInput).toHaveValue('');
    const row = secrets.locator(`[data-testid="secret"][data-name="${secretName}"]`);
    await expect(row.getByTestId('secret-name')).toHaveText(secretName);
    await expect(row).toContainText('the API token');
    await expect(settings).not.toContainText(secretValue);
    const listed = await json<{ secrets: { name: string }[] }>(await api(`/projects/${project.id}/secrets`));
    expect(listed.secrets.map((s) => s.name)).toEqual([secretName]);
    expect(JSON.stringify(listed)).not.toContain(secretValue);
    expect(await violations(page, '[data-testid="settings"]'), 'violations on the secrets').toEqual([]);
    await settings.screenshot({ path: screenshotPath('project-secrets') });
    await settings.getByRole('button', { name: 'Close' }).click();

    // The audit log of the project, from the More menu: the budget and the secret, the value nowhere.
    await fromHeader(page, 'audit-open');
    const audit = page.getByTestId('audit-view');
    await expect(audit).toBeVisible();
    await expect(page.getByTestId('audit-scope-project')).toBeChecked();
    const events = audit.getByTestId('audit-event');
    const budgetSet = events.filter({
      has: page.locator('[data-testid="audit-event-action"]', { hasText: 'budget.set' }),
    });
    await expect(budgetSet.first()).toBeVisible();
    await expect(audit.locator('[data-testid="audit-event"][data-action="budget.deleted"]')).toHaveCount(1);
    const secretSet = audit.locator('[data-testid="audit-event"][data-action="secret.set"]');
    await expect(secretSet).toHaveCount(1);
    await expect(secretSet.getByTestId('audit-event-target')).toHaveText(secretName);
    await expect(secretSet).toContainText('the API token');
    await expect(audit).not.toContainText(secretValue);
    // What the daily budget was set to, in full, as text.
    const daily = audit
      .locator('[data-testid="audit-event"][data-action="budget.set"]')
      .filter({ hasText: 'day budget' });
    await daily.first().getByTestId('audit-event-summary').click();
    await expect(daily.first().getByTestId('audit-event-after')).toBeVisible();
    await expect(daily.first().getByTestId('audit-event-after')).toContainText('"amount_usd"');
    // What the view shows is what the API answers, newest first.
    const page1 = await json<AuditPage>(await api(`/audit?project_id=${project.id}`));
    await expect(events).toHaveCount(page1.events.length);
    await expect(events.first()).toHaveAttribute('data-id', page1.events[0]!.id);
    expect(await violations(page), 'violations on the audit log').toEqual([]);
    await page.screenshot({ path: screenshotPath('audit-log') });

    // One kind of change only.
    await audit.getByTestId('audit-action').selectOption('secret.set');
    await expect(events).toHaveCount(1);
    await expect(events.first()).toHaveAttribute('data-action', 'secret.set');
    await page.keyboard.press('Escape');
    await expect(audit).toBeHidden();

    // Spent: the next run is refused, and the banner comes back as an alert that says until when.
    await json<Budget>(
      await api(`/projects/${project.id}/budget`, {
        method: 'PUT',
        json: { period: 'day', amount_usd: budget!.spent_usd / 2, tokens: budget!.tokens, warn_at: 0.8 },
      }),
    );
    await startRun(page, `${message} (3)`);
    await expect(page.getByTestId('request-error')).toContainText('BudgetExceeded');
    await expect(banner).toHaveAttribute('role', 'alert');
    await expect(banner).toHaveAttribute('data-status', 'exceeded');
    await expect(banner).toContainText('Budget spent: new runs are refused until');
    await page.screenshot({ path: screenshotPath('budget-banner-spent') });
  } finally {
    for (const b of await budgetsOf(project.id).catch(() => [] as Budget[]))
      await api(`/budgets/${b.id}`, { method: 'DELETE' });
  }
});
