import { randomUUID } from 'node:crypto';
import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';
import { DEFAULT_ORG_ID, DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { signSession } from '../helpers/sessions';
import {
  api,
  baseUrl,
  expect,
  openStudio,
  phase,
  screenshotPath,
  script,
  signInByLink,
  sql,
  startRun,
  test,
  words,
} from './studio.fixtures';

/**
 * Routing rules in the studio (docs/http-api.md#routing-rules): the rule editor, a rule that skips a gate (warned
 * about, drawn around the gate, refused to someone below the gate's role), and the rule a run's route came from.
 * `release-note` (test/e2e/assets) has a gate only an administrator decides.
 */
const AGENT = 'release-note';

async function clearConfig(): Promise<void> {
  for (const node of ['intake', 'analysis', 'output']) {
    for (const scope of [`project_id=${DEFAULT_PROJECT_ID}`, `org_id=${DEFAULT_ORG_ID}`]) {
      await api(`/agents/${AGENT}/nodes/${node}/config?${scope}`, { method: 'DELETE' });
    }
  }
}
test.beforeEach(clearConfig);
test.afterEach(clearConfig);

/** The points of an SVG path on screen, every few pixels along it. */
async function pointsAlong(page: Page, testId: string): Promise<{ x: number; y: number }[]> {
  return page.getByTestId(testId).evaluate((element) => {
    const path = element as SVGPathElement;
    const matrix = path.getScreenCTM()!;
    const length = path.getTotalLength();
    const points: { x: number; y: number }[] = [];
    for (let at = 0; at <= length; at += 4) {
      const p = path.getPointAtLength(at).matrixTransform(matrix);
      points.push({ x: p.x, y: p.y });
    }
    return points;
  });
}

async function addRule(page: Page, match: string, target: string): Promise<void> {
  await page.getByTestId('rule-add').click();
  await page.getByTestId('rule-0-match').fill(match);
  await page.getByTestId('rule-0-target').selectOption(target);
}

test('a rule that skips a gate is warned about when saved and drawn around the gate; the run names the rule', async ({
  page,
}) => {
  await page.setViewportSize({ width: 1500, height: 900 });
  await openStudio(page, AGENT);
  await phase(page, 'analysis').click();
  await addRule(page, 'ship', 'output');
  // Told while editing, before anything is saved.
  await expect(page.getByTestId('rule-0-warning')).toHaveText(
    '⚠ Skips the gate “Approve publishing”: a run this rule matches goes on without the approval that admin or higher gives.',
  );
  await page.getByTestId('config-save').click();
  await expect(page.getByTestId('config-saved')).toContainText('1 warning above');
  await expect(page.getByTestId('config-warnings')).toHaveText(
    '⚠ rule 1 (contains "ship" → output) skips the gate "Approve publishing": a run it matches goes on to output ' +
      'without waiting for the approval that admin or higher gives',
  );

  // The rule's edge goes over the gate, not behind it.
  const edge = page.locator('[data-id="rule:analysis->output"]');
  await expect(edge).toHaveClass(/skips-gate/);
  await expect(edge).toContainText('contains ship · skips gate');
  const gate = (await phase(page, 'gate').boundingBox())!;
  const points = await pointsAlong(page, 'edge-rule:analysis->output');
  expect(points.length).toBeGreaterThan(20);
  const inside = points.filter(
    (p) => p.x >= gate.x && p.x <= gate.x + gate.width && p.y >= gate.y && p.y <= gate.y + gate.height,
  );
  expect(inside).toEqual([]);
  expect(Math.min(...points.map((p) => p.y))).toBeLessThan(gate.y);
  await page.getByTestId('graph-canvas').screenshot({ path: screenshotPath('rules-skip-gate-canvas') });
  await page.screenshot({ path: screenshotPath('rules-skip-gate-warning') });

  // A run the rule matches goes straight to output, and says which rule sent it there.
  await script(words('ready to ship'));
  await startRun(page, 'Release note for 2.4');
  await expect(page.getByTestId('run-status')).toContainText('✓ Run complete');
  await expect(phase(page, 'gate')).toHaveAttribute('data-state', 'idle');
  await expect(edge).toHaveClass(/taken/);
  await page.getByTestId('tab-state').click();
  await expect(page.getByTestId('state-route')).toHaveText(
    "Route to output: rule 'contains ship' matched (a saved override)",
  );
  await page.getByTestId('tab-history').click();
  await page.getByTestId('history-checkpoint').filter({ hasText: 'after analysis' }).click();
  await expect(page.getByTestId('history-route')).toHaveText(
    "Route to output: rule 'contains ship' matched (a saved override)",
  );
  await page.screenshot({ path: screenshotPath('rules-history-names-rule') });
});

test("a rule that skips a gate asking for a role above its author's is refused", async ({ page }) => {
  const id = randomUUID();
  await sql(`INSERT INTO svc_users (id, issuer, subject, name) VALUES ($1, 'e2e', $2, 'Olive Owner')`, [id, id]);
  await sql(`INSERT INTO svc_memberships (user_id, scope_type, scope_id, role) VALUES ($1, 'project', $2, 'owner')`, [
    id,
    DEFAULT_PROJECT_ID,
  ]);
  const session = await signSession(id, process.env.E2E_SESSION_SECRET!, '1h', 'Olive Owner');
  await signInByLink(page, `${baseUrl()}/ui#token=${session}`, page.getByTestId(`asset-${AGENT}`));
  await page.getByTestId(`asset-${AGENT}`).click();
  await phase(page, 'analysis').click();
  await addRule(page, 'ship', 'output');
  await page.getByTestId('config-save').click();
  await expect(page.getByTestId('rule-0-error')).toHaveText(
    'skips the gate "Approve publishing", which only admin or higher may decide; your role on this project is owner',
  );
  await expect(page.getByTestId('config-saved')).toHaveCount(0);
  await page.screenshot({ path: screenshotPath('rules-skip-gate-refused') });
  // Nothing was saved.
  const saved = await api(`/agents/${AGENT}/nodes/analysis/config?project_id=${DEFAULT_PROJECT_ID}`);
  expect((await saved.json()).routing_overrides).toEqual([]);
});

test('the rule editor: labelled fields, the next phase as target, plain words, and Save always in reach', async ({
  page,
}) => {
  await page.setViewportSize({ width: 1280, height: 640 });
  await openStudio(page, AGENT);
  await phase(page, 'analysis').click();
  await expect(phase(page, 'analysis')).toHaveAttribute('data-selected', 'true');
  await expect(page.getByTestId('rules')).toContainText(
    'Rules are tried in order of priority, smallest number first; the first that matches decides the next phase.',
  );
  await page.getByTestId('rule-add').click();
  await page.getByTestId('rule-add').click();
  // A new rule goes where the run goes anyway (the gate after analysis), not back to the start.
  await expect(page.getByTestId('rule-0-target')).toHaveValue('gate');
  await expect(page.getByLabel('Rule 1: when the output')).toHaveValue('contains');
  await expect(page.getByLabel('Rule 2: text to match')).toBeVisible();
  await expect(page.getByLabel('Rule 2: go to phase')).toBeVisible();
  await expect(page.getByRole('button', { name: 'Remove rule 2' })).toBeVisible();
  await expect(page.getByTestId('rules')).toContainText('When the output');
  await expect(page.getByTestId('config-save')).toBeInViewport();

  await page.getByTestId('rule-0-match').fill('draft');
  await page.getByTestId('rule-1-match').fill('final');
  await page.getByLabel('Rule 2: priority').fill('');
  await page.getByTestId('config-save').click();
  await expect(page.getByTestId('rule-1-error')).toHaveText('Priority: enter a whole number');

  const { violations } = await new AxeBuilder({ page })
    .include('[data-testid="phase-config"]')
    .withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'])
    .analyze();
  expect(violations.flatMap((v) => v.nodes.map((n) => `${v.id}: ${n.target.join(' ')}`))).toEqual([]);
  await page.screenshot({ path: screenshotPath('rules-editor') });
});

test("the canvas colours a rejected run's whole path to its end, and shows every phase on request", async ({
  page,
}) => {
  // A window too short for the graph at a readable size: it starts at its first phase, and "Whole graph" fits them
  // all, the last ones unclipped.
  await page.setViewportSize({ width: 1024, height: 600 });
  await openStudio(page, AGENT);
  const canvasAt = async () => (await page.getByTestId('graph-canvas').boundingBox())!;
  const first = (await phase(page, 'intake').boundingBox())!;
  expect(first.y).toBeGreaterThanOrEqual((await canvasAt()).y);
  await page.getByTestId('graph-whole').click();
  await expect(page.getByTestId('graph-whole')).toHaveAttribute('aria-pressed', 'true');
  await page.waitForTimeout(300);
  const inside = async () => {
    const canvas = await canvasAt();
    for (const id of ['intake', 'output', 'cancelled']) {
      const box = (await phase(page, id).boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(canvas.x);
      expect(box.x + box.width).toBeLessThanOrEqual(canvas.x + canvas.width);
      expect(box.y).toBeGreaterThanOrEqual(canvas.y);
      expect(box.y + box.height).toBeLessThanOrEqual(canvas.y + canvas.height);
    }
  };
  await inside();
  // With room, the graph fits at a readable size by itself, and nothing is offered.
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.getByTestId('graph-whole').click();
  await expect(page.getByTestId('graph-whole')).toHaveCount(0);
  await inside();
  await script(words('Release 2.4: faster start.'));
  await startRun(page, 'Release note for 2.4');
  await expect(page.getByTestId('approval-card')).toBeVisible();
  await page.getByTestId('gate-reject').click();
  await page.getByTestId('gate-reject-submit').click();
  await expect(page.getByTestId('run-status')).toContainText('Run rejected');
  // The whole path, from the first phase to the one the rejection ends the run at, in the rejection's colour.
  for (const step of ['intake->analysis', 'analysis->gate', 'gate->cancelled']) {
    await expect(page.locator(`[data-id="${step}"]`)).toHaveClass(/taken rejected/);
    await expect(page.locator(`[data-id="${step}"] .vue-flow__edge-path`)).toHaveCSS('stroke', 'rgb(220, 38, 38)');
  }
  await expect(page.locator('[data-id="gate->output"]')).not.toHaveClass(/taken/);
  await expect(phase(page, 'cancelled')).toHaveAttribute('data-path-end', 'rejected');
  await expect(phase(page, 'cancelled')).toHaveCSS('border-top-color', 'rgb(220, 38, 38)');
  await expect(page.getByTestId('phase-mark-cancelled')).toHaveText('the run ended here: rejected');
  await page.getByTestId('graph-canvas').screenshot({ path: screenshotPath('rules-rejected-path') });
});
