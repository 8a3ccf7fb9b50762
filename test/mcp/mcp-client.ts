import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ElicitRequestSchema,
  type CallToolResult,
  type ElicitRequest,
  type ElicitResult,
  type Progress,
} from '@modelcontextprotocol/sdk/types.js';

/** The tools the server offers, sorted by name. */
export const MCP_TOOLS = [
  'answer_question',
  'cancel_run',
  'decide_approval',
  'get_run',
  'list_agents',
  'list_approvals',
  'list_thread_runs',
  'run_agent',
];

/** How a test answers the questions the server asks inside a call; absent: the client cannot be asked. */
export type Answerer = (request: ElicitRequest['params']) => Promise<ElicitResult>;

export interface TestMcpClient {
  client: Client;
  /** Calls a tool as an assistant would, with a progress token and a timeout reset by progress. */
  call(name: string, args?: Record<string, unknown>): Promise<CallToolResult & { progress: string[] }>;
  close(): Promise<void>;
}

/** The official SDK's client over streamable HTTP, with a bearer token, as an IDE's assistant connects. */
export async function connectMcp(baseUrl: string, token: string, answer?: Answerer): Promise<TestMcpClient> {
  const client = new Client(
    { name: 'mcp-test-client', version: '1.0.0' },
    { capabilities: answer ? { elicitation: { form: {} } } : {} },
  );
  if (answer) client.setRequestHandler(ElicitRequestSchema, (request) => answer(request.params));
  const transport = new StreamableHTTPClientTransport(new URL(`${baseUrl}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return {
    client,
    async call(name, args = {}) {
      const progress: string[] = [];
      const result = (await client.callTool({ name, arguments: args }, undefined, {
        onprogress: (p: Progress) => progress.push(p.message ?? ''),
        timeout: 60_000,
        resetTimeoutOnProgress: true,
      })) as CallToolResult;
      return { ...result, progress };
    },
    close: () => client.close(),
  };
}

/** The text of an error result. */
export const errorText = (result: CallToolResult) => {
  if (!result.isError) throw new Error(`expected an error result, got ${JSON.stringify(result.structuredContent)}`);
  return (result.content[0] as { text: string }).text;
};
