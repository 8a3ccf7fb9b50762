import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@langchain/langgraph-sdk';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { toolAgent, writeFixtureCatalog } from '../helpers/fixture-assets';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { type Part, collect } from './lg-stream-parts';

/**
 * A tool call that asks (docs/tools.md), through the LangGraph API: it stops the stream as an interrupt whose action
 * is the tool and its arguments, and an edit of them runs exactly the edited arguments (a real MCP server over stdio).
 */
const API_TOKEN = 'langgraph-tools-admin-token-0123456789';
const ctx = useIntegrationServer({ server: false });
let server: TestServer;
let catalog: string;
let project: string;

beforeAll(async () => {
  catalog = await writeFixtureCatalog([toolAgent]);
  server = await ctx.start({ AUTH_ENABLED: 'true', SVC_API_TOKEN: API_TOKEN, GENERATED_DIR: catalog });
  project = fs.mkdtempSync(path.join(os.tmpdir(), 'lg-tools-'));
});
afterAll(async () => {
  await server?.close();
  fs.rmSync(catalog, { recursive: true, force: true });
  fs.rmSync(project, { recursive: true, force: true });
});

interface Interrupt {
  id: string;
  value: { action_requests: { name: string; args: Record<string, unknown> }[]; gate: { tool_call?: unknown } };
}

const interruptOf = (parts: Part[]) =>
  (parts.filter((p) => p.event === 'values').at(-1)!.data as { __interrupt__?: Interrupt[] }).__interrupt__?.[0];

it('a tool call that asks is an interrupt; its edit runs the edited arguments', async () => {
  const client = new Client({ apiUrl: `${server.url}/lg`, apiKey: API_TOKEN });
  const file = path.join(project, 'effects.log');
  ctx.model.toolTurns = [[{ name: 'mock__append', arguments: { file, line: 'proposed' } }]];
  const thread = await client.threads.create();
  const stopped = await collect(
    client.runs.stream(thread.thread_id, 'tool-review', {
      input: { message: 'review the change' },
      config: { configurable: { project_path: project } },
    }),
  );
  const interrupt = interruptOf(stopped)!;
  expect(interrupt.value.action_requests).toMatchObject([{ name: 'mock.append', args: { file, line: 'proposed' } }]);
  expect(interrupt.value.gate.tool_call).toBeDefined();
  expect((await client.threads.get(thread.thread_id)).interrupts).toEqual({ intake: [interrupt] });

  ctx.model.reply(['Noted.']);
  const resumed = await collect(
    client.runs.stream(thread.thread_id, 'tool-review', {
      command: {
        resume: {
          [interrupt.id]: {
            decisions: [{ type: 'edit', edited_action: { name: 'mock.append', args: { file, line: 'edited' } } }],
          },
        },
      },
      streamMode: ['values', 'custom'],
    }),
  );
  const decided = resumed.find((p) => p.event === 'custom' && (p.data as { type: string }).type === 'tool_decided');
  expect(decided!.data).toMatchObject({ decision: 'edit', deciders: ['api-token'] });
  expect(fs.readFileSync(file, 'utf8').trim()).toBe('edited');
  // The run goes on to its gate: the next interrupt is the gate's.
  expect(interruptOf(resumed)!.value.action_requests[0]!.name).toBe('gate');
});
