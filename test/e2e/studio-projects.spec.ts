import { randomUUID } from 'node:crypto';
import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';
import type { Scope } from '../../src-server/contracts/tenancy';
import { signSession } from '../helpers/sessions';
import { api, baseUrl, expect, openStudio, screenshotPath, signInByLink, sql, test } from './studio.fixtures';

/**
 * "New project…" in the scope switcher: whoever may make a project in a team of the organisation chosen (its admins,
 * as the server checks) makes one there in a small labelled form; it is listed and chosen at once. Escape closes the
 * form, and what went wrong is said in words.
 */

const created = async (path: string, json: unknown) => {
  const res = await api(path, { method: 'POST', json });
  expect(res.status).toBe(201);
  return (await res.json()) as Scope;
};

/** What axe-core finds against WCAG 2.1 A and AA in one part of the page, a line per element. */
async function violations(page: Page, selector: string): Promise<string[]> {
  const { violations: found } = await new AxeBuilder({ page })
    .include(selector)
    .withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'])
    .analyze();
  return found.flatMap((v) => v.nodes.map((n) => `${v.id}: ${n.target.join(' ')}: ${n.failureSummary ?? ''}`));
}

/** Someone signed in with a session of their own, with the roles given, in this page. */
async function signedIn(page: Page, name: string, roles: [string, string, string][]): Promise<string> {
  const id = randomUUID();
  await sql(`INSERT INTO svc_users (id, issuer, subject, name) VALUES ($1, 'e2e', $2, $3)`, [id, id, name]);
  for (const [type, scope, role] of roles)
    await sql(`INSERT INTO svc_memberships (user_id, scope_type, scope_id, role) VALUES ($1, $2, $3, $4)`, [
      id,
      type,
      scope,
      role,
    ]);
  const session = await signSession(id, process.env.E2E_SESSION_SECRET!, '1h', name);
  await signInByLink(page, `${baseUrl()}/ui#token=${session}`, page.getByTestId('scope-org'));
  return id;
}

test('an administrator makes a project from the switcher: a labelled form, Escape, a missing name in words, then it is chosen', async ({
  page,
}) => {
  const suffix = randomUUID().slice(0, 6);
  const org = await created('/orgs', { name: `Made in the studio ${suffix}` });
  const team = await created('/teams', { name: 'Platform', parent_id: org.id });
  await openStudio(page);
  await page.getByTestId('scope-org').selectOption(org.id);
  await expect(page.getByTestId('scope-project')).toHaveValue('');

  const opener = page.getByTestId('project-new');
  await opener.click();
  const form = page.getByTestId('new-project');
  await expect(form).toBeVisible();
  await expect(form.getByRole('heading')).toHaveText(`New project in Made in the studio ${suffix}`);
  await expect(form.getByLabel('Name', { exact: true })).toBeFocused();
  await expect(form.getByLabel('Team', { exact: true })).toHaveValue(team.id);
  expect(await violations(page, '[data-testid="new-project"]')).toEqual([]);
  await page.screenshot({ path: screenshotPath('new-project-form') });

  // Escape closes it, with nothing made, and focus is back on New project….
  await page.keyboard.press('Escape');
  await expect(form).toBeHidden();
  await expect(opener).toBeFocused();

  // A name left empty is said in words, beside the field.
  await opener.click();
  await form.getByTestId('new-project-create').click();
  await expect(form.getByTestId('new-project-error')).toHaveText('Name: enter a name for the project');
  await expect(form.getByLabel('Name', { exact: true })).toHaveAttribute('aria-invalid', 'true');
  await expect(form.getByLabel('Name', { exact: true })).toHaveAccessibleDescription(/enter a name for the project/);
  expect(await violations(page, '[data-testid="new-project"]')).toEqual([]);

  // Made: listed in the switcher at once and chosen, focus on the switcher, and kept after a reload.
  await form.getByLabel('Name', { exact: true }).fill(`Checkout ${suffix}`);
  await form.getByLabel('Name', { exact: true }).press('Enter');
  await expect(form).toBeHidden();
  const [project] = (await (await api(`/projects?team_id=${team.id}`)).json()) as Scope[];
  expect(project!.name).toBe(`Checkout ${suffix}`);
  await expect(page.getByTestId('scope-project')).toHaveValue(project!.id);
  await expect(page.getByTestId('scope-project')).toBeFocused();
  await expect(page.getByTestId('toast')).toContainText(`Project Checkout ${suffix} created`);
  await expect(page.getByTestId('thread-item')).toHaveCount(0);
  await page.screenshot({ path: screenshotPath('new-project-chosen') });
  await page.reload();
  await expect(page.getByTestId('scope-project')).toHaveValue(project!.id);
});

test('New project… is offered to the admins of a team only, and a refusal from the server is said in words', async ({
  browser,
  page,
}) => {
  const suffix = randomUUID().slice(0, 6);
  const org = await created('/orgs', { name: `Two people ${suffix}` });
  const team = await created('/teams', { name: 'Payments', parent_id: org.id });

  // An owner of the organisation may not make projects (the team's admins do): nothing is offered to her.
  const owner = await browser.newContext();
  const ownerPage = await owner.newPage();
  await signedIn(ownerPage, `Olive ${suffix}`, [['org', org.id, 'owner']]);
  await expect(ownerPage.getByTestId('scope-org')).toHaveValue(org.id);
  await expect(ownerPage.getByTestId('project-new')).toHaveCount(0);
  await owner.close();

  // The team's administrator is offered it; her role is lowered while the form is open: the server's refusal is said.
  const adam = await signedIn(page, `Adam ${suffix}`, [['team', team.id, 'admin']]);
  await expect(page.getByTestId('scope-org')).toHaveValue(org.id);
  await page.getByTestId('project-new').click();
  const form = page.getByTestId('new-project');
  await form.getByLabel('Name', { exact: true }).fill(`Refunds ${suffix}`);
  expect((await api(`/teams/${team.id}/members/${adam}`, { method: 'PUT', json: { role: 'member' } })).status).toBe(
    200,
  );
  await form.getByTestId('new-project-create').click();
  await expect(form.getByTestId('new-project-error')).toHaveText(
    'The project was not created: your role here is member; this needs admin or higher',
  );
  await expect(form).toBeVisible();
  await expect(form.getByLabel('Name', { exact: true })).toBeFocused();
  await page.screenshot({ path: screenshotPath('new-project-refused') });
  expect(await (await api(`/projects?team_id=${team.id}`)).json()).toEqual([]);
});
