import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApprovalItem } from '../../src-server/contracts/runs';
import { startAskingServer, type AskingServer } from '../fixtures/mcp-asking-server';
import { askingAgent, writeFixtureCatalog } from '../helpers/fixture-assets';
import { useIntegrationServer } from '../helpers/integration';
import type { ServerProcess } from '../helpers/process';
import { readEvents } from '../helpers/sse';
import { until } from '../helpers/until';

/**
 * A tool server's question whose process dies (docs/approvals.md#questions-from-tool-servers): the call it was
 * asked in dies with it, so the question is withdrawn when another process takes the run over, and the call, which
 * may have acted, is asked again as interrupted, as any call cut off mid-way.
 */
const ctx = useIntegrationServer({ server: false });
let asker: AskingServer;
let catalog: string;
const servers: ServerProcess[] = [];

beforeAll(async () => {
  asker = await startAskingServer();
  catalog = await writeFixtureCatalog([askingAgent(asker.url)]);
});
afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop()));
  await asker?.close();
  fs.rmSync(catalog, { recursive: true, force: true });
});

const env = () => ({ GENERATED_DIR: catalog, MCP_ALLOWED_HOSTS: '127.0.0.1', RUN_LEASE_S: '2' });

describe('a question whose process dies', () => {
  it('is withdrawn when another process takes the run over, and the call is asked again as interrupted', async () => {
    ctx.model.toolTurns.push([{ name: 'asker__ask_release', arguments: {} }]);
    ctx.model.reply(['Noted.']);
    const first = await ctx.spawn(env());
    servers.push(first);
    let runId = '';
    let stopId = '';
    await readEvents(
      await first.request('/graphs/ask-review/run', { method: 'POST', json: { message: 'ask me' } }),
      (event) => {
        if (event.data.type === 'run_start') runId = event.data.run_id;
        if (event.data.type === 'tool_question') stopId = `${runId}:${event.id}`;
        return stopId !== '';
      },
    );
    await first.stop('SIGKILL');

    const second = await ctx.spawn(env());
    servers.push(second);
    const interrupted = await until(async () => {
      const inbox = (await (await second.request('/approvals')).json()) as ApprovalItem[];
      return inbox.find((item) => item.run_id === runId && item.tool_call?.interrupted) || undefined;
    });
    expect(interrupted).toMatchObject({ stop: { kind: 'tool_call' }, tool_call: { tool: 'asker.ask_release' } });
    const inbox = (await (await second.request('/approvals')).json()) as ApprovalItem[];
    expect(inbox.some((item) => item.stop.id === stopId)).toBe(false);
    const late = await second.request(`/stops/${stopId}/answer`, { method: 'POST', json: { action: 'decline' } });
    expect(late.status).toBe(409);
    expect((await late.json()).error.message).toBe(`stop "${stopId}" is not pending: the question was withdrawn`);
    await second.request(`/runs/${runId}/cancel`, { method: 'POST', json: {} });
  });
});
