import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { compileAssets } from '../../src-server/assets/asset-compiler';
import { DEFAULT_GENERATED_DIR } from '../../src-server/assets/catalog';
import type { Manifest } from '../../src-server/contracts/assets';
import { startModelFake } from '../fixtures/fake-models';
import { startAskingServer } from '../fixtures/mcp-asking-server';
import { askingAgent } from '../helpers/fixture-assets';
import { createDatabase, startDatabaseServer } from '../helpers/postgres';
import { spawnServer } from '../helpers/process';
import { startSlackStandIn } from '../helpers/slack-stand-in';
import { startSmtpStandIn } from '../helpers/smtp-stand-in';

export const E2E_TOKEN = 'e2e-token-0123456789abcdef';
/** Known to the specs, which sign session tokens with it: several people in browser contexts of their own. */
export const E2E_SESSION_SECRET = 'session-secret-for-the-e2e-server-0123456789';
/** The service's public address as Slack would be given it: it makes the request URL the studio shows. */
export const E2E_PUBLIC_URL = 'https://agents.example.test';

/**
 * One server for the browser tests, with one local-runtime slot so the queue can be shown. What the
 * specs need reaches them through the environment: the server's address and database, the fake
 * runtime's address (scripted over HTTP), the token, the Slack stand-in's address and credentials, and the mail
 * server's port with the address that lists what it received (both stand-ins live in this process: the specs reach
 * them over HTTP only). An MCP server that asks a person mid-call (questions from tool servers) runs here too, for the
 * agent `question-review` to call.
 */
export default async function globalSetup() {
  const databaseServer = await startDatabaseServer();
  const database = await createDatabase(databaseServer.url, 'svc_e2e');

  const model = await startModelFake();
  // Slack's Web API for the server; no organisation is connected until a spec connects one (studio-slack.spec.ts).
  const slack = await startSlackStandIn();
  // A real SMTP server on loopback; no mail server is set until a spec sets one (studio-mail.spec.ts).
  const smtp = await startSmtpStandIn();
  const asker = await startAskingServer();
  const generated = await catalogWithOwnRoutes(asker.url);
  const server = await spawnServer({
    GENERATED_DIR: generated,
    DATABASE_URL: database.url,
    LOCAL_LLM_BASE: model.url,
    DEFAULT_MODEL: 'fake-model',
    LOCAL_LLM_MAX_CONCURRENT: '1',
    AUTH_ENABLED: 'true',
    SVC_API_TOKEN: E2E_TOKEN,
    SESSION_SECRET: E2E_SESSION_SECRET,
    // The specs' project folders are temporary folders: they lie under the roots, as a team's repositories would.
    PROJECT_ROOTS: os.tmpdir(),
    // The stand-in's default model is priced (dearly, so that a run's cost reads as more than a few zeros); llama3.2
    // has no price: its runs show "cost unknown".
    MODEL_PRICES: JSON.stringify({ 'fake-model': { input_per_mtok: 150, output_per_mtok: 600 } }),
    SLACK_API_URL: slack.apiUrl,
    PUBLIC_URL: E2E_PUBLIC_URL,
    // The mail server is the stand-in on loopback, which the address rule refuses otherwise. The rule is the webhooks'
    // too: no spec here registers a webhook, or counts on a loopback address being refused.
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    // The asking MCP server is on loopback, which an agent's MCP address may name only when allowed.
    MCP_ALLOWED_HOSTS: '127.0.0.1',
  });
  process.env.E2E_BASE_URL = server.url;
  process.env.E2E_DATABASE_URL = database.url;
  process.env.E2E_MODEL_URL = model.url;
  process.env.E2E_TOKEN = E2E_TOKEN;
  process.env.E2E_SESSION_SECRET = E2E_SESSION_SECRET;
  process.env.E2E_PUBLIC_URL = E2E_PUBLIC_URL;
  process.env.E2E_SLACK_URL = slack.url;
  process.env.E2E_SLACK_BOT_TOKEN = slack.botToken;
  process.env.E2E_SLACK_SIGNING_SECRET = slack.signingSecret;
  process.env.E2E_SLACK_TEAM_ID = slack.teamId;
  process.env.E2E_SMTP_PORT = String(smtp.port);
  process.env.E2E_SMTP_MAILS_URL = smtp.mailsUrl;

  return async () => {
    await server.stop();
    await model.close();
    await slack.close();
    await smtp.close();
    await asker.close();
    await database.drop();
    await databaseServer.stop();
    await fs.rm(path.dirname(generated), { recursive: true, force: true });
  };
}

/**
 * The shipped catalog (with the shipped files' texts beside it) plus `routed-summary`: repo-summary whose dispatch
 * phase declares its own routing rules, which no shipped asset does, so the studio can be seen showing them; the
 * assets of test/e2e/assets, compiled as `npm run build:assets` compiles the shipped ones (a gate two people
 * approve, with a deadline); and `question-review`, whose intake may call the asking MCP server at `askerUrl` (its
 * address is known only once it listens, so no asset file names it; named to sort after change-review, which the
 * portal's examples show as the first agent with a gate).
 */
async function catalogWithOwnRoutes(askerUrl: string): Promise<string> {
  // `generated/` beside `assets/`, as in a checkout: the server reads a built-in's text there (GET /agents/{name}).
  const root = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-e2e-generated-'));
  const dir = path.join(root, 'generated');
  await fs.symlink(path.resolve(DEFAULT_GENERATED_DIR, '..', 'assets'), path.join(root, 'assets'));
  await fs.cp(DEFAULT_GENERATED_DIR, dir, { recursive: true });
  const file = (name: string) => path.join(dir, 'manifests', 'commands', `${name}.json`);
  const summary = JSON.parse(await fs.readFile(file('repo-summary'), 'utf8')) as Manifest;
  const routed: Manifest = {
    ...summary,
    name: 'routed-summary',
    phases: summary.phases.map((p) =>
      p.id === 'dispatch'
        ? {
            ...p,
            routes: [
              { condition: 'contains', match: 'urgent', target: 'summarize', priority: 1 },
              { condition: 'always', match: '', target: 'execute', priority: 5 },
            ],
          }
        : p,
    ),
  };
  await fs.writeFile(file('routed-summary'), JSON.stringify(routed));
  const asking = { ...askingAgent(askerUrl), name: 'question-review', source: 'assets/agents/question-review.md' };
  await fs.writeFile(path.join(dir, 'manifests', 'agents', 'question-review.json'), JSON.stringify(asking));
  for (const manifest of compileAssets(path.join(import.meta.dirname, 'assets')).manifests) {
    await fs.writeFile(
      path.join(dir, 'manifests', `${manifest.kind}s`, `${manifest.name}.json`),
      JSON.stringify(manifest),
    );
  }
  return dir;
}
