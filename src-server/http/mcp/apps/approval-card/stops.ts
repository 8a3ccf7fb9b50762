/**
 * What the card reads in the result of the tool it is shown for: run_agent's and get_run's run (`waiting`, its
 * phases), or list_approvals' list. The result comes through the host from a model's conversation, so it is read
 * field by field, and every text in it is shown as text only.
 */

/** A tool result as the host hands it to the card (the protocol's CallToolResult). */
export interface ToolResult {
  content?: unknown;
  structuredContent?: unknown;
  isError?: boolean;
}

export interface Phase {
  id: string;
  output: string;
}

/** One place a run waits for a person: a gate, or a tool call whose policy asks. */
export interface Stop {
  kind: 'gate' | 'tool_call';
  runId: string;
  threadId: string;
  agent: string;
  /** The stop's round, named in decide_approval so that a decision on text another approver edited is refused. */
  round: number;
  gate: string;
  callId?: string;
  tool?: string;
  arguments?: Record<string, unknown>;
  /** The tool's JSON Schema, where the result carries it. */
  inputSchema?: Record<string, unknown>;
  question: string;
  /** What the person decides on: each phase the gate shows under its name, or the tool and its arguments. */
  content: string;
  decideRole: string;
  studioUrl?: string;
  project?: string;
  waitingSince?: string;
  expiresAt?: string;
  approvals?: { needed: number; given: number };
  /** The run's phases and their outputs: what an edit of a gate starts from (a run's result carries them). */
  phases?: Phase[];
}

/** The stops to show, or what to say instead. */
export type Shown = { stops: Stop[] } | { notice: string };

type Fields = Record<string, unknown>;

const isFields = (value: unknown): value is Fields =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
const whole = (value: unknown): number | undefined => (Number.isInteger(value) ? (value as number) : undefined);

/** The text of a result's first text block: an error result's message. */
export function resultText(result: ToolResult): string {
  const blocks = Array.isArray(result.content) ? (result.content as unknown[]) : [];
  const first = blocks.find((block) => isFields(block) && block.type === 'text' && typeof block.text === 'string');
  return first ? (first as { text: string }).text : '';
}

/** The run's phases in a run's result (run_agent, get_run). */
export function phasesOf(run: unknown): Phase[] {
  const phases = isFields(run) && Array.isArray(run.phases) ? run.phases : [];
  return phases.flatMap((phase: unknown) => {
    const id = isFields(phase) ? text(phase.id) : undefined;
    const output = isFields(phase) ? text(phase.output) : undefined;
    return id !== undefined && output !== undefined ? [{ id, output }] : [];
  });
}

/** A stop from a `waiting` object (of a run, or an item of list_approvals) and where it waits. */
function stopOf(waiting: Fields, where: { runId: unknown; threadId: unknown; agent: unknown }): Stop | null {
  const kind = waiting.kind === 'gate' || waiting.kind === 'tool_call' ? waiting.kind : undefined;
  const runId = text(where.runId);
  const threadId = text(where.threadId);
  const round = whole(waiting.round);
  const gate = text(waiting.gate);
  const callId = text(waiting.call_id);
  if (!kind || !runId || !threadId || round === undefined || gate === undefined) return null;
  if (kind === 'tool_call' && !callId) return null;
  const needed = whole(waiting.approvals_needed);
  const given = whole(waiting.approvals_given);
  return {
    kind,
    runId,
    threadId,
    agent: text(where.agent) ?? '',
    round,
    gate,
    callId,
    tool: text(waiting.tool),
    arguments: isFields(waiting.arguments) ? waiting.arguments : undefined,
    inputSchema: isFields(waiting.input_schema) ? waiting.input_schema : undefined,
    question: text(waiting.question) ?? '',
    content: text(waiting.content) ?? '',
    decideRole: text(waiting.decide_role) ?? 'member',
    studioUrl: text(waiting.studio_url),
    project: text(waiting.project),
    waitingSince: text(waiting.waiting_since),
    expiresAt: text(waiting.expires_at),
    approvals: needed !== undefined && given !== undefined ? { needed, given } : undefined,
  };
}

const RUN_STATE: Record<string, string> = {
  queued: 'is queued',
  running: 'is running',
  completed: 'has completed',
  rejected: 'ended at a rejected gate',
  error: 'failed',
  cancelled: 'was cancelled',
};

/** For a stop of a kind the card does not know (a newer server's): the studio decides every kind. */
const ELSEWHERE = 'What waits here cannot be decided on this card: open it in the studio.';

/** What the card shows for a tool's result. */
export function shownOf(result: ToolResult): Shown {
  if (result.isError) return { notice: resultText(result) || 'The tool answered an error.' };
  const data = result.structuredContent;
  if (isFields(data) && Array.isArray(data.approvals)) {
    const stops = data.approvals.flatMap((item: unknown) => {
      const stop = isFields(item)
        ? stopOf(item, { runId: item.run_id, threadId: item.thread_id, agent: item.agent })
        : null;
      return stop ? [stop] : [];
    });
    if (stops.length) return { stops };
    return { notice: data.approvals.length ? ELSEWHERE : 'Nothing waits for your decision.' };
  }
  if (isFields(data) && typeof data.run_id === 'string') {
    const stop = isFields(data.waiting)
      ? stopOf(data.waiting, { runId: data.run_id, threadId: data.thread_id, agent: data.agent })
      : null;
    if (stop) return { stops: [{ ...stop, phases: phasesOf(data) }] };
    if (isFields(data.waiting)) return { notice: ELSEWHERE };
    const state = RUN_STATE[text(data.status) ?? ''] ?? `is ${text(data.status) ?? 'in an unknown state'}`;
    return { notice: `The run of ${text(data.agent) ?? 'the agent'} ${state}: nothing waits for a decision.` };
  }
  return { notice: 'This result names no approval.' };
}
