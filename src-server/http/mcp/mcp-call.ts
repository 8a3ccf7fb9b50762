import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { RequestId, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import type { Access } from '../../auth/access';
import type { Principal } from '../../auth/principal';
import type { TenancyService } from '../../auth/tenancy.service';
import type { AgentDirectory } from '../../services/agent-directory';
import type { ApprovalsService } from '../../services/approvals.service';
import type { RunsService } from '../../services/runs.service';
import type { ThreadsService } from '../../services/threads.service';
import type { McpSessionsService } from '../../services/mcp-sessions.service';
import type { McpSession } from '../../storage/mcp-sessions';

/** The services the MCP server's tools reach: the same the HTTP API's routers do (docs/mcp.md). */
export interface McpServices {
  agents: AgentDirectory;
  access: Access;
  tenancy: TenancyService;
  runsService: RunsService;
  threadsService: ThreadsService;
  approvals: ApprovalsService;
  sessions: McpSessionsService;
  /** How long a call waits for a person's answer to a question (MCP_ELICITATION_TIMEOUT_S). */
  elicitationTimeoutS: number;
}

/** One request to /mcp: who calls, in which session, over which transport, at which address. */
export interface McpRequestContext {
  principal: Principal;
  session: McpSession;
  transport: Transport;
  /** The server's address as the client reached it, for the studio links in results. */
  baseUrl: string;
  /** The ids of this request's `tools/call` messages made as tasks (docs/mcp.md#runs-as-tasks). */
  taskRequests: ReadonlySet<RequestId>;
}

export type ToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;
