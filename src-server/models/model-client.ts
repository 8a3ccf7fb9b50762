import type { RunEventOf } from '../contracts/events';
import type { NodeWarning } from '../contracts/runs';

/** A piece of a message's text. */
export interface MessagePart {
  text: string;
  /**
   * Set on the pieces the context budget may shorten when the message alone is over it: `name` is what the
   * `context_trimmed` report calls the piece, and lower `order` is cut first.
   */
  trimmable?: { name: string; order: number };
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  /** When set, `content` is these texts joined, so that the context budget can cut inside the message. */
  parts?: MessagePart[];
  /** assistant: the tools the model called in this turn. */
  tool_calls?: ModelToolCall[];
  /** tool: the call this message answers. */
  tool_call?: { id: string; name: string };
}

/** A tool as a model is offered it: a name the providers accept (`^[A-Za-z0-9_-]{1,64}$`) and a JSON Schema. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/**
 * One tool call of a model's turn, with its arguments parsed (Ollama sends an object, the cloud providers a JSON
 * string). `id` is the service's own (the run, node, turn and place in the turn), since Ollama's calls carry none.
 */
export interface ModelToolCall {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

/** What one model call produced: its answer's text and the tools it called (none: the answer is final). */
export interface ModelTurn {
  text: string;
  tool_calls: Omit<ModelToolCall, 'id'>[];
}

export type QueueInfo = Omit<RunEventOf<'queue'>, 'type' | 'node'>;
export type TrimReport = Omit<RunEventOf<'context_trimmed'>, 'type' | 'node'>;
export type LoadingInfo = Omit<RunEventOf<'model_loading'>, 'type' | 'node'>;
export type RetryInfo = Omit<RunEventOf<'model_retry'>, 'type' | 'node'>;

/** One call's figures, as the runtime or provider reported them (null where it did not). */
export interface CallUsage {
  /** The model string the call went to (`cloud_c:gpt-4.1-mini`, `llama3.2`): what its price is looked up by. */
  model: string;
  /** Time spent waiting for a local-runtime slot; null for a cloud call. */
  queue_wait_ms: number | null;
  prompt_tokens: number | null;
  output_tokens: number | null;
  /** From the request to the answer's end, the slot wait left out: the call's latency. */
  duration_ms: number;
  /** The local runtime's time loading the model for this call (Ollama's `load_duration`); null for a cloud call. */
  load_ms: number | null;
  /** The local runtime's time writing the answer (Ollama's `eval_duration`); null for a cloud call. */
  generation_ms: number | null;
  /** The model that answered, as the runtime or provider named it. */
  response_model?: string | null;
  /** Why the answer ended, in the runtime's or provider's own words (`stop`, `length`, `end_turn`, …). */
  finish_reason?: string | null;
}

export interface ModelCall {
  model: string;
  /** Names the call in debug logs, e.g. `run <id> node analysis`. */
  label: string;
  /** Whose call this is (the run's project): the local-runtime queue shares its slots fairly between tenants. */
  tenant: string;
  /** The run making the call: the local-runtime queue keeps its slot for the run's next call while nobody waits. */
  runId?: string;
  messages: ChatMessage[];
  /** Tools the model may call in this turn; absent or empty: it only writes text. */
  tools?: ToolSpec[];
  signal: AbortSignal;
  onToken(text: string): void;
  /** The call waits for a local-runtime slot (called again whenever its position changes). */
  onQueued(info: QueueInfo): void;
  /** Older messages were dropped, or parts of the newest one cut, to fit the context budget. */
  onTrimmed(report: TrimReport): void;
  /** A thinking model's reasoning, piece by piece: never part of the returned answer. */
  onThinking?(text: string): void;
  /** The local runtime loads the model before answering (a cold start). */
  onLoading?(info: LoadingInfo): void;
  /** The call failed for a passing reason before it streamed anything, and is tried again after a wait. */
  onRetry?(info: RetryInfo): void;
  /** The runtime cut the prompt, or stopped the answer at its length limit. */
  onWarning?(warning: NodeWarning): void;
  /** The call's figures, once it has ended (also when it ended in an error after the stream began). */
  onUsage?(usage: CallUsage): void;
}

/**
 * What the graph needs from the model layer: stream one chat completion, token by token,
 * abortable, and return the whole text with the tools the model called. Provider choice, the local
 * queue and the context budget live behind it, in model-providers.ts.
 */
export interface ModelClient {
  stream(call: ModelCall): Promise<ModelTurn>;
}
