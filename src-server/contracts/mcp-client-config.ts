/** The name an MCP client lists this server under. */
export const MCP_SERVER_NAME = 'agent-workflow';

/**
 * The configuration an MCP client takes to reach this server's `/mcp` with a personal access token (Claude Desktop,
 * Cursor, VS Code and others read this shape): what the desktop app's Settings and the studio's show to copy.
 */
export function mcpClientConfig(serverUrl: string, token: string): string {
  const server = { type: 'http', url: `${serverUrl}/mcp`, headers: { Authorization: `Bearer ${token}` } };
  return JSON.stringify({ mcpServers: { [MCP_SERVER_NAME]: server } }, null, 2);
}
