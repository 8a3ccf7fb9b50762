/**
 * The MCP server's sessions and the questions asked in them, as db/mcp-sessions.repository.ts stores them and the MCP
 * server (http/mcp/) uses them through services/mcp-sessions.service.ts: one definition, below db/.
 */

/** An MCP session as its initialize request began it (docs/mcp.md#sessions-on-any-process). */
export interface McpSession {
  id: string;
  user_id: string;
  protocol_version: string;
  client_name: string | null;
  client_version: string | null;
  /** The client said it can answer form elicitations. */
  elicitation: boolean;
}

/**
 * Where a question asked inside a call stands: `asked` until its answer comes; then `decided` (the answer was taken
 * as a decision), `declined` (the person declined or dismissed it), `failed` (the decision was refused: `outcome`
 * says why), or `expired` (nobody answered in time).
 */
export type ElicitationState = 'asked' | 'answering' | 'decided' | 'declined' | 'failed' | 'expired';

export interface McpElicitation {
  id: string;
  session_id: string;
  run_id: string;
  thread_id: string;
  gate: string;
  /** The tool call asked about; null at a gate. */
  call_id: string | null;
  /** The phase whose output an `edit` replaces (a gate's); null for a tool call. */
  context_node: string | null;
  /** The stop the question showed, and its round then (contracts/stops.ts); null in a row of the release before. */
  stop_id: string | null;
  round: number | null;
  state: ElicitationState;
  outcome: string | null;
}

/**
 * Where an MCP task stands, read from its run (docs/mcp.md#runs-as-tasks): `working` while it runs or is queued,
 * `input_required` while it waits for a person, then `completed`, `failed` (the run ended in error) or `cancelled`.
 * A run a person rejected is `completed`: it ended as its agent says a rejected gate ends.
 */
export type McpTaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/** A `run_agent` call made as a task: its run and its person, with the run's status as the task's. */
export interface McpTask {
  id: string;
  user_id: string;
  /** Null when the call was refused before a run began (a viewer's, say): `error` says why. */
  run_id: string | null;
  error: string | null;
  tool: string;
  status: McpTaskStatus;
  /** Why it failed or was cancelled, as the run says. */
  status_message: string | null;
  ttl_ms: number;
  poll_interval_ms: number;
  created_at: string;
  last_updated_at: string;
}

export type NewMcpTask = Pick<McpTask, 'id' | 'user_id' | 'run_id' | 'error' | 'tool' | 'ttl_ms' | 'poll_interval_ms'>;
