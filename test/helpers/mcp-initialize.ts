/**
 * An MCP client's first request, raw: `initialize` at `mcpUrl` with a bearer token. Its status says whether /mcp
 * takes the token (200) or not (401), without a client library in between.
 */
export function mcpInitialize(mcpUrl: string, token: string, protocolVersion = '2025-11-25'): Promise<Response> {
  return fetch(mcpUrl, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion, capabilities: {}, clientInfo: { name: 'initialize-check', version: '1' } },
    }),
  });
}
