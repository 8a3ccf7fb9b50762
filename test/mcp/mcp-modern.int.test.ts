import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { threePeople } from '../helpers/sessions';
import { connectMcp, MCP_TOOLS } from './mcp-client';

/**
 * Protocol 2026-07-28 on one /mcp beside 2025-11-25 (docs/mcp.md#protocol-versions): a client of the SDK's v2 packages
 * pinned to the new revision (stateless requests, each with its own `_meta`; the question at a gate carried in the
 * result, `input_required`, and the answer in the call sent again) runs `run_agent` to the gate and through it,
 * its rounds alternating between two servers; a v1 client of 2025-11-25 does the same on the same address.
 */
const SECRET = 'a-session-secret-for-the-modern-mcp-test-0123';
const ctx = useIntegrationServer({
  server: { AUTH_ENABLED: 'true', SESSION_SECRET: SECRET, SVC_API_TOKEN: 'modern-mcp-test-admin-token-0123' },
});
let ann: string;
let vera: string;
let mallory: string;
let other: TestServer;

beforeAll(async () => {
  ({ ann, vera, mallory } = await threePeople(ctx.server.pool, SECRET, DEFAULT_PROJECT_ID));
  other = await ctx.start({ AUTH_ENABLED: 'true', SESSION_SECRET: SECRET });
});
afterAll(async () => {
  await other?.close();
});

interface Wire {
  url: string;
  status: number;
  request: Record<string, unknown>;
  headers: Record<string, string>;
}

/**
 * A v2 client pinned to 2026-07-28 whose requests go to the two servers in turn (as a load balancer may send them),
 * with what it sent and what came back recorded; `answer` fills the questions it is asked.
 */
async function modernClient(
  token: string,
  answer?: (message: string) => Record<string, string>,
): Promise<{ client: Client; wire: Wire[]; asked: string[] }> {
  const wire: Wire[] = [];
  const asked: string[] = [];
  let turn = 0;
  const alternating = async (input: string | URL | Request, init?: RequestInit) => {
    const servers = [ctx.server.url, other.url];
    const url = String(input).replace(ctx.server.url, servers[turn++ % 2]!);
    const res = await fetch(url, init);
    wire.push({
      url,
      status: res.status,
      request: JSON.parse(String(init?.body ?? '{}')) as Record<string, unknown>,
      headers: Object.fromEntries(new Headers(init?.headers).entries()),
    });
    return res;
  };
  const client = new Client(
    { name: 'modern-test-client', version: '1.0.0' },
    {
      capabilities: answer ? { elicitation: { form: {} } } : {},
      versionNegotiation: { mode: { pin: '2026-07-28' } },
    },
  );
  if (answer) {
    client.setRequestHandler('elicitation/create', async (request) => {
      asked.push(request.params.message);
      return { action: 'accept', content: answer(request.params.message) };
    });
  }
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${ctx.server.url}/mcp`), {
      fetch: alternating,
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  return { client, wire, asked };
}

const calls = (wire: Wire[]) => wire.filter((w) => w.request.method === 'tools/call');

describe('protocol 2026-07-28 with the SDK v2 client', () => {
  it('lists the same tools, with no session and the revision in every request', async () => {
    const { client, wire } = await modernClient(ann);
    expect(client.getNegotiatedProtocolVersion?.()).toBe('2026-07-28');
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(MCP_TOOLS);
    for (const sent of wire) {
      expect(sent.headers['mcp-session-id']).toBeUndefined();
      expect(sent.headers['mcp-protocol-version']).toBe('2026-07-28');
    }
    expect(wire.some((w) => w.request.method === 'initialize')).toBe(false);
    // Batches are no part of it: two requests in one body are refused.
    const listing = wire.find((w) => w.request.method === 'tools/list')!;
    const batch = await fetch(`${ctx.server.url}/mcp`, {
      method: 'POST',
      headers: listing.headers,
      body: JSON.stringify([listing.request, { ...listing.request, id: 99 }]),
    });
    expect(batch.status).toBe(400);
    await client.close();
  });

  it('runs run_agent to the gate and through it: the question in the result, the answer in the call sent again', async () => {
    ctx.model.reply(['The ', 'change ', 'is ', 'sound.']);
    const { client, wire, asked } = await modernClient(ann, () => ({ decision: 'approve', reason: 'fine by me' }));
    const result = await client.callTool({ name: 'run_agent', arguments: { agent: 'review', message: 'review it' } });
    expect(result.structuredContent).toMatchObject({ status: 'completed', waiting: null });
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain('Publish this review?');
    expect(asked[0]).toContain('The change is sound.');
    expect((result.structuredContent as { decisions: unknown[] }).decisions).toEqual([
      expect.objectContaining({ gate: 'gate', decision: 'approve', by: 'Ann', reason: 'fine by me' }),
    ]);
    // Two rounds of one call, each on another server: the second carries the answer and the signed state.
    const rounds = calls(wire);
    expect(rounds).toHaveLength(2);
    expect(new Set(rounds.map((r) => new URL(r.url).port)).size).toBe(2);
    const second = rounds[1]!.request.params as { inputResponses: unknown; requestState: string };
    expect(second.inputResponses).toEqual({
      decision: { action: 'accept', content: { decision: 'approve', reason: 'fine by me' } },
    });
    expect(second.requestState).toMatch(/^v1\./);
    await client.close();
  });

  it('takes an edit, and a decline leaves the run waiting with the reason', async () => {
    ctx.model.reply(['Draft.']);
    const editing = await modernClient(ann, () => ({ decision: 'edit', text: 'Better.' }));
    const edited = await editing.client.callTool({ name: 'run_agent', arguments: { agent: 'review', message: 'x' } });
    expect(edited.structuredContent).toMatchObject({ status: 'completed' });
    const { thread_id } = edited.structuredContent as { thread_id: string };
    const decisions = await (await ctx.server.request(`/threads/${thread_id}/decisions`)).json();
    expect(decisions).toEqual([expect.objectContaining({ decision: 'edit', edits: { analysis: 'Better.' } })]);
    await editing.client.close();

    ctx.model.reply(['Draft.']);
    const declining = new Client(
      { name: 'decliner', version: '1' },
      { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    declining.setRequestHandler('elicitation/create', async () => ({ action: 'decline' }));
    await declining.connect(
      new StreamableHTTPClientTransport(new URL(`${ctx.server.url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${ann}` } },
      }),
    );
    const declined = await declining.callTool({ name: 'run_agent', arguments: { agent: 'review', message: 'x' } });
    expect(declined.structuredContent).toMatchObject({
      status: 'waiting_approval',
      waiting: { why_not_asked: 'the question was declined in the client; the run still waits' },
    });
    await declining.close();
  });

  it('asks no one who may not decide, and a client that takes no questions gets the run waiting', async () => {
    ctx.model.reply(['Draft.']);
    const { client, asked } = await modernClient(ann);
    const result = await client.callTool({ name: 'run_agent', arguments: { agent: 'review', message: 'x' } });
    expect(asked).toEqual([]);
    expect(result.structuredContent).toMatchObject({
      status: 'waiting_approval',
      waiting: { why_not_asked: expect.stringContaining('did not declare elicitation') },
    });
    const viewer = await modernClient(vera, () => ({ decision: 'approve' }));
    const refused = await viewer.client.callTool({ name: 'run_agent', arguments: { agent: 'review', message: 'x' } });
    expect(refused.isError).toBe(true);
    await client.close();
    await viewer.client.close();
  });

  it("refuses another person's state: a question's answer is good only for whom it was asked", async () => {
    ctx.model.reply(['Draft.']);
    const { client, wire } = await modernClient(ann, () => ({ decision: 'approve' }));
    await client.callTool({ name: 'run_agent', arguments: { agent: 'review', message: 'x' } });
    const second = calls(wire)[1]!;
    const replay = await fetch(`${ctx.server.url}/mcp`, {
      method: 'POST',
      headers: { ...second.headers, authorization: `Bearer ${mallory}` },
      body: JSON.stringify(second.request),
    });
    const text = await replay.text();
    expect(text).toContain('Invalid or expired requestState');
    await client.close();
  });
});

describe('2025-11-25 beside it', () => {
  it('a v1 client of 2025-11-25 runs run_agent through the gate on the same address, asked inside the call', async () => {
    ctx.model.reply(['Fine.']);
    const mcp = await connectMcp(ctx.server.url, ann, async () => ({
      action: 'accept',
      content: { decision: 'approve' },
    }));
    expect(mcp.client.getServerVersion()?.name).toBe('agent-workflow-service');
    const result = await mcp.call('run_agent', { agent: 'review', message: 'review it' });
    expect(result.structuredContent).toMatchObject({ status: 'completed' });
    await mcp.close();
  });
});
