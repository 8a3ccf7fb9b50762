import type { McpSessionsRepository } from '../db/mcp-sessions.repository';
import type { McpTasksRepository } from '../db/mcp-tasks.repository';
import type { ElicitationState, McpElicitation, McpSession, McpTask, NewMcpTask } from '../storage/mcp-sessions';

/**
 * The MCP server's sessions, the questions asked in them (docs/mcp.md#sessions-on-any-process) and the tasks of its
 * people (docs/mcp.md#runs-as-tasks), shared by every process: what the MCP server (http/mcp/) keeps of a client
 * between its requests.
 */
export function mcpSessionsService(deps: { sessions: McpSessionsRepository; tasks: McpTasksRepository }) {
  const { sessions, tasks } = deps;
  return {
    create: (session: McpSession): Promise<void> => sessions.create(session),

    /** The session, if it is this person's and still alive; marks it used. */
    use: (id: string, userId: string): Promise<McpSession | undefined> => sessions.use(id, userId),

    /** Ends the session (DELETE /mcp): true when it was this person's. */
    end: (id: string, userId: string): Promise<boolean> => sessions.end(id, userId),

    ask: (question: Omit<McpElicitation, 'state' | 'outcome'>, timeoutS: number): Promise<void> =>
      sessions.ask(question, timeoutS),

    /** Takes the answer to a question of this session still asked and in time, exactly once across the processes. */
    take: (id: string, sessionId: string): Promise<McpElicitation | undefined> => sessions.take(id, sessionId),

    settle: (id: string, state: Exclude<ElicitationState, 'asked' | 'answering'>, outcome: string | null) =>
      sessions.settle(id, state, outcome),

    /** Gives up on a question nobody answered: true when it was still asked (an answer may have just come). */
    expire: (id: string): Promise<boolean> => sessions.expire(id),

    state: (id: string): Promise<Pick<McpElicitation, 'state' | 'outcome'> | undefined> => sessions.state(id),

    createTask: (task: NewMcpTask) => tasks.create(task),

    /** The task, if it is this person's and has not expired: another person's reads as one that does not exist. */
    task: (id: string, userId: string): Promise<McpTask | undefined> => tasks.get(id, userId),

    /** This person's tasks, newest first, a page after the task `after` names; `more` when others follow. */
    tasks: (userId: string, after: string | undefined) => tasks.list(userId, after),
  };
}

export type McpSessionsService = ReturnType<typeof mcpSessionsService>;
