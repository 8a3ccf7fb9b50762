import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type {
  InitializeRequest,
  JSONRPCErrorResponse,
  JSONRPCResultResponse,
} from '@modelcontextprotocol/sdk/types.js';

/** The parts of the official MCP SDK the server at /mcp uses. */
export interface McpServerSdk {
  McpServer: typeof McpServer;
  StreamableHTTPServerTransport: typeof StreamableHTTPServerTransport;
  isInitializeRequest(message: unknown): message is InitializeRequest;
  /** A client's answer to a request of the server's (a question asked inside a call). */
  isResponse(message: unknown): message is JSONRPCResultResponse | JSONRPCErrorResponse;
  /** The revision the SDK's server answers a client asking for `requested` with: it, or the newest it knows. */
  negotiatedVersion(requested: string): string;
}

let loading: Promise<McpServerSdk> | undefined;

/**
 * Loads the SDK's server at the first request to /mcp, not at the service's start: its import takes about 0.4 s,
 * which a service nobody reaches over MCP should not pay at every start (the client side waits likewise, in
 * tools/mcp-sdk.ts).
 */
export function loadMcpServerSdk(): Promise<McpServerSdk> {
  loading ??= Promise.all([
    import('@modelcontextprotocol/sdk/server/mcp.js'),
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]).then(([mcp, http, types]) => ({
    McpServer: mcp.McpServer,
    StreamableHTTPServerTransport: http.StreamableHTTPServerTransport,
    isInitializeRequest: (message): message is InitializeRequest => types.isInitializeRequest(message),
    isResponse: (message): message is JSONRPCResultResponse | JSONRPCErrorResponse =>
      types.isJSONRPCResultResponse(message) || types.isJSONRPCErrorResponse(message),
    negotiatedVersion: (requested) =>
      types.SUPPORTED_PROTOCOL_VERSIONS.includes(requested) ? requested : types.LATEST_PROTOCOL_VERSION,
  }));
  return loading;
}
