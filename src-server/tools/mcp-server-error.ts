/**
 * An MCP server that cannot be started or reached, or whose declaration cannot be used as it stands (an unset
 * variable, a refused address). The message names the server, and never carries a value from the environment.
 */
export class McpServerError extends Error {
  override name = 'McpServerError';
}
