/**
 * The service as an MCP client, for the conformance suite's client mode: `conformance client --command <this>` starts
 * a test server of its own for a scenario and runs this program with the server's URL as its last argument and the
 * scenario's name in MCP_CONFORMANCE_SCENARIO. It drives the production path (src-server/tools/mcp-servers.ts, the
 * class a run's tool calls go through, with its URL check, pinned connections and traced fetch), not a client of its
 * own: the server as an asset would declare it (`transport: http`), its tools listed, then the scenario's tool called.
 * It runs on the service's Node (tsx), not on the suite's Node 22.
 *
 * Exit code: 0 when the listing and the call went through, 1 otherwise, which the suite reports ("client exited with
 * error") next to its own checks, and mcp-tools.test.ts fails on.
 */
import { errorMessage } from '../../src-server/contracts/errors';
import type { QuestionAsker } from '../../src-server/contracts/tool-questions';
import type { McpServer } from '../../src-server/contracts/tools';
import { McpServers } from '../../src-server/tools/mcp-servers';

const url = process.argv.at(-1);
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
if (!url || !/^https?:\/\//.test(url)) {
  console.error('usage: service-client.ts <server url> (with MCP_CONFORMANCE_SCENARIO set)');
  process.exit(2);
}

/** The tool each scenario's server offers, and the arguments to call it with; absent: listing the tools is all. */
const CALLS: Record<string, { tool: string; args: Record<string, unknown>; ask?: QuestionAsker }> = {
  tools_call: { tool: 'add_numbers', args: { a: 5, b: 3 } },
  // The server asks mid-call; a person accepts without filling anything in, and the fields take the form's defaults.
  'elicitation-sep1034-client-defaults': {
    tool: 'test_client_elicitation_defaults',
    args: {},
    ask: async () => ({ action: 'accept', content: {} }),
  },
  'sse-retry': { tool: 'test_reconnection', args: {} },
};

const server: McpServer = { name: 'conformance', transport: 'http', url, headers: {} };
const mcp = new McpServers({
  env: {},
  // The suite's servers need no header: nothing to read.
  variables: async (_project, names) => Object.fromEntries(names.map((name) => [name, undefined])),
  idleMs: 60_000,
  callTimeoutMs: 10_000,
  // The suite's servers listen on localhost: allowed as MCP_ALLOWED_HOSTS would allow it.
  allowedPrivateHosts: ['localhost'],
  binDirs: [],
  stdio: { mode: 'refused', reason: 'no stdio server here' },
});
const signal = new AbortController().signal;

let ok = true;
try {
  const tools = await mcp.tools('conformance', server, null, signal);
  console.log(`tools: ${tools.map((t) => t.name).join(', ') || '(none)'}`);
  const call = CALLS[scenario];
  if (call) {
    const result = await mcp.call('conformance', server, null, call.tool, call.args, signal, call.ask);
    console.log(`${call.tool}: ${result.is_error ? 'error: ' : ''}${result.text}`);
    ok = !result.is_error;
  }
} catch (error) {
  console.error(errorMessage(error));
  ok = false;
} finally {
  await mcp.close();
}
process.exit(ok ? 0 : 1);
