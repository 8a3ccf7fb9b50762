import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ElicitRequestSchema, ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

/** The parts of the official MCP SDK the client uses. */
export interface McpSdk {
  Client: typeof Client;
  StdioClientTransport: typeof StdioClientTransport;
  StreamableHTTPClientTransport: typeof StreamableHTTPClientTransport;
  McpError: typeof McpError;
  ErrorCode: typeof ErrorCode;
  ElicitRequestSchema: typeof ElicitRequestSchema;
  /** The variables the stdio transport passes on to a server by itself. */
  DEFAULT_INHERITED_ENV_VARS: readonly string[];
}

let loading: Promise<McpSdk> | undefined;
let loaded: McpSdk | undefined;

/**
 * Loads the SDK at the first server's start, not at the service's: its import takes a quarter of a second, which a
 * server whose agents call no MCP server should not pay at every start.
 */
export function loadMcpSdk(): Promise<McpSdk> {
  loading ??= Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]).then(([client, stdio, http, types]) => {
    loaded = {
      Client: client.Client,
      StdioClientTransport: stdio.StdioClientTransport,
      StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
      McpError: types.McpError,
      ErrorCode: types.ErrorCode,
      ElicitRequestSchema: types.ElicitRequestSchema,
      DEFAULT_INHERITED_ENV_VARS: stdio.DEFAULT_INHERITED_ENV_VARS,
    };
    return loaded;
  });
  return loading;
}

/** The SDK's error with its code, when `error` is one (nothing the SDK threw exists before it is loaded). */
export function mcpErrorCode(error: unknown): number | undefined {
  return loaded && error instanceof loaded.McpError ? error.code : undefined;
}

/** The SDK's error codes, once it is loaded. */
export function mcpErrorCodes(): typeof ErrorCode | undefined {
  return loaded?.ErrorCode;
}
