import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useIntegrationServer } from '../helpers/integration';
import { connectMcp, type TestMcpClient } from './mcp-client';

/**
 * The approval card as an MCP App (docs/mcp.md#the-approval-card-mcp-apps), as a host discovers and reads it with the
 * official SDK's client: the tools that show it name it, and `resources/read` answers one self-contained HTML page
 * with the extension's MIME type. test/e2e/mcp-app-approval-card.spec.ts loads it in a browser as a host does.
 */
const API_TOKEN = 'mcp-app-test-admin-token-0123456789';
const CARD = 'ui://agent-workflow/approval-card';
/** The MIME type the MCP Apps extension (2026-01-26) requires of an HTML app, written out rather than imported. */
const MCP_APP_HTML = 'text/html;profile=mcp-app';

const ctx = useIntegrationServer({ server: { AUTH_ENABLED: 'true', SVC_API_TOKEN: API_TOKEN } });

let mcp: TestMcpClient;
beforeAll(async () => {
  // What `npm test` builds first (pretest), built here too so that this file runs alone; instant when up to date.
  execFileSync(process.execPath, ['build/build.mjs', 'mcp-apps'], {
    cwd: path.resolve(import.meta.dirname, '..', '..'),
    stdio: 'pipe',
  });
  mcp = await connectMcp(ctx.server.url, API_TOKEN);
});
afterAll(() => mcp?.close());

async function readCard() {
  const { contents } = await mcp.client.readResource({ uri: CARD });
  expect(contents).toHaveLength(1);
  return contents[0] as { uri: string; mimeType: string; text: string; _meta?: Record<string, unknown> };
}

describe('the approval card', () => {
  it('is named by run_agent, get_run and list_approvals, in the key hosts read and in its older flat form', async () => {
    const { tools } = await mcp.client.listTools();
    const meta = new Map(tools.map((tool) => [tool.name, tool._meta]));
    for (const name of ['run_agent', 'get_run', 'list_approvals']) {
      expect(meta.get(name), name).toEqual({ ui: { resourceUri: CARD }, 'ui/resourceUri': CARD });
    }
    for (const name of ['list_agents', 'list_thread_runs', 'decide_approval', 'cancel_run']) {
      expect(meta.get(name), name).toBeUndefined();
    }
  });

  it('is listed as a resource with the MCP Apps MIME type', async () => {
    const { resources } = await mcp.client.listResources();
    expect(resources).toEqual([
      expect.objectContaining({
        uri: CARD,
        name: 'approval-card',
        title: 'Approval card',
        mimeType: MCP_APP_HTML,
        _meta: { ui: { prefersBorder: true } },
      }),
    ]);
  });

  it('reads as one HTML page with that MIME type, its script and styles inside', async () => {
    const card = await readCard();
    expect(card).toMatchObject({ uri: CARD, mimeType: MCP_APP_HTML, _meta: { ui: { prefersBorder: true } } });
    expect(card.text).toMatch(/^<!doctype html>/i);
    expect(card.text).toContain('<title>Approval card</title>');
    expect(card.text.match(/<script\b[^>]*>/gi)).toEqual(['<script>']);
    expect(card.text.match(/<style\b[^>]*>/gi)).toEqual(['<style>']);
    // The SDK's App, which speaks to the host, is in the page.
    expect(card.text).toContain('ui/initialize');
  });

  it('loads nothing from anywhere: no URL in its markup or styles, and a policy that forbids every fetch', async () => {
    const { text } = await readCard();
    const script = /<script>([\s\S]*)<\/script>/.exec(text)![1]!;
    const page = text.replace(script, '');
    expect(page.match(/(https?:)?\/\/[\w.-]+/gi) ?? []).toEqual([]);
    expect(page).not.toMatch(/\b(src|href|srcset|action|poster|data)\s*=/i);
    expect(page).not.toMatch(/<(link|img|iframe|object|embed|base|source|video|audio)\b/i);
    expect(page).not.toMatch(/url\(|@import/i);
    const policy = /http-equiv="Content-Security-Policy"\s+content="([^"]+)"/.exec(text)![1]!;
    // The bundled SDK carries a few URLs as plain strings (JSON Schema dialect names); the policy is what keeps any
    // code in the page from fetching: nothing but its inline script and styles, and images from data: URLs.
    expect(policy.split(/;\s*/)).toEqual(
      expect.arrayContaining(["default-src 'none'", "script-src 'unsafe-inline'", "style-src 'unsafe-inline'"]),
    );
    expect(policy).not.toMatch(/https?:|\*|'self'/);
  });

  it('leaves the text and structured result of hosts without MCP Apps as they were', async () => {
    ctx.model.reply(['Looks ', 'fine.']);
    const run = await mcp.call('run_agent', { agent: 'review', message: 'review my branch' });
    const { run_id: runId } = run.structuredContent as { run_id: string };
    const read = await mcp.call('get_run', { run_id: runId });
    expect(read._meta).toBeUndefined();
    expect(read.content).toEqual([{ type: 'text', text: JSON.stringify(read.structuredContent, null, 2) }]);
    expect(read.structuredContent).toMatchObject({ status: 'waiting_approval', waiting: { kind: 'gate' } });
  });
});
