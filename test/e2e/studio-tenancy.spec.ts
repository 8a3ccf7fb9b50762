import { randomUUID } from 'node:crypto';
import type { Scope } from '../../src-server/contracts/tenancy';
import { useOidcServer } from './oidc-server';
import { api, expect, phase, screenshotPath, script, sql, startRun, test, words } from './studio.fixtures';

/**
 * The studio as a team on a shared server uses it: an administrator creates an organisation with a team and a
 * project and makes someone its owner; she signs in with the identity provider and works there, and nothing of the
 * default organisation is needed or touched.
 */
const server = useOidcServer({ SESSION_SECRET: 'session-secret-for-the-e2e-tenancy-0123' });

const created = async (path: string, json: unknown) => {
  const res = await api(path, { method: 'POST', json });
  expect(res.status).toBe(201);
  return (await res.json()) as Scope;
};

test('a project owner in a second organisation: sign-in, canvas, her phase configuration, an approved run', async ({
  page,
}) => {
  // Someone signed in before her: the very first user of an installation would be made an administrator.
  await sql(
    `INSERT INTO svc_users (id, issuer, subject, name) VALUES ($1, 'e2e', 'earlier-user', 'Earlier user')
     ON CONFLICT (issuer, subject) DO NOTHING`,
    [randomUUID()],
  );
  const suffix = randomUUID().slice(0, 6);
  const org = await created('/orgs', { name: `Acme ${suffix}` });
  const team = await created('/teams', { name: 'Platform', parent_id: org.id });
  const project = await created('/projects', { name: `Checkout ${suffix}`, parent_id: team.id });

  await page.setViewportSize({ width: 1600, height: 1000 });
  await page.goto(`${server.url}/ui`);
  await page.getByTestId('sign-in-oidc').click();
  const login = `grace-${suffix}`;
  await page.fill('input[name=login]', login);
  await page.fill('input[name=password]', 'any password');
  await page.click('button[type=submit]');
  await page.waitForURL((url) => url.href.startsWith(server.url) || url.pathname.includes('interaction'));
  if (!page.url().startsWith(server.url)) await page.click('button[type=submit]');
  await expect(page.getByTestId('user-name')).toHaveText(`User ${login}`);

  // The administrator makes her the project's owner; she reloads.
  const [user] = await sql<{ id: string }>(`SELECT id FROM svc_users WHERE subject = $1`, [login]);
  const granted = await api(`/projects/${project.id}/members/${user!.id}`, { method: 'PUT', json: { role: 'owner' } });
  expect(granted.status).toBe(200);
  await page.reload();

  await expect(page.getByTestId('scope-org')).toHaveValue(org.id);
  await expect(page.getByTestId('scope-project')).toHaveValue(project.id);
  await page.getByTestId('asset-change-review').click();
  await expect(phase(page, 'intake')).toBeVisible();
  await expect(phase(page, 'gate')).toBeVisible();

  // A routing rule for her project only: an intake answer that mentions shipping goes on to the analysis.
  await phase(page, 'intake').click();
  await expect(page.getByTestId('phase-config')).toBeVisible();
  await page.getByTestId('rule-add').click();
  await page.getByTestId('rule-0-condition').selectOption('contains');
  await page.getByTestId('rule-0-match').fill('ship');
  await page.getByTestId('rule-0-target').selectOption('analysis');
  await page.getByTestId('config-save').click();
  await expect(page.getByTestId('config-saved')).toBeVisible();
  await expect(page.getByTestId('config-scope')).toContainText(`Checkout ${suffix}`);
  const saved = await sql(`SELECT 1 FROM svc_project_node_configs WHERE project_id = $1 AND agent = 'change-review'`, [
    project.id,
  ]);
  expect(saved).toHaveLength(1);

  await script(words('Ready to ship: the loader is renamed. Risk is low.'), 5);
  await startRun(page, 'Review: rename the loader in checkout');
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await expect(page.getByTestId('route-lines')).toHaveText('intake → analysis');
  await page.screenshot({ path: screenshotPath('tenancy-second-org-approval') });
  await script(words('Approved and published.'), 5);
  await page.getByTestId('gate-approve').click();
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  await expect(phase(page, 'output')).toHaveAttribute('data-state', 'completed');
  await page.screenshot({ path: screenshotPath('tenancy-second-org-completed') });

  const [thread] = await sql<{ project_id: string }>(
    `SELECT project_id FROM svc_threads WHERE last_message = 'Review: rename the loader in checkout'`,
  );
  expect(thread!.project_id).toBe(project.id);
  await expect(page.getByTestId('thread-item')).toHaveCount(1);

  // Back to the organisation's configuration (it has none): her project's record goes.
  await phase(page, 'intake').click();
  await page.getByTestId('tab-phase').click();
  await page.getByTestId('config-use-organisation').click();
  await expect(page.getByTestId('config-use-organisation')).toBeHidden();
  await expect(page.getByTestId('rule-0')).toBeHidden();
  expect(await sql(`SELECT 1 FROM svc_project_node_configs WHERE project_id = $1`, [project.id])).toHaveLength(0);

  // Her rule is her project's: a run of the default project, with the same answer, matches nothing.
  await script(words('Ready to ship: the loader is renamed. Risk is low.'));
  const other = await api('/graphs/change-review/run', { method: 'POST', json: { message: 'default project run' } });
  const stream = await other.text();
  expect(stream).toContain('gate_waiting');
  expect(stream).not.toContain('route_matched');
  const [waiting] = await sql<{ id: string }>(`SELECT id FROM svc_runs WHERE message = 'default project run'`);
  await api(`/runs/${waiting!.id}/cancel`, { method: 'POST', json: {} });
});
