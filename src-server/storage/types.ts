import type { GateDecisionEvent } from '../contracts/events';
import type { RouteMatch } from '../contracts/runs';
import type {
  GateDecision,
  GateDecisionKind,
  MultitaskStrategy,
  NodeStatus,
  NodeWarning,
  PendingGate,
  RunStatus,
} from '../contracts/runs';
import type { Role } from '../contracts/tenancy';
import type { PendingToolCall, ToolReplay } from '../contracts/tools';
import type { QuestionAction } from '../contracts/tool-questions';

/**
 * What the run engine stores, as interfaces: PostgreSQL implements them (db/), and so do the in-memory twins
 * (storage/memory/) that the engine's unit tests run on. One contract test (storage/storage.contract.ts) holds both to
 * the same behaviour.
 */

/** Who executes a run: a server process, until its lease lapses. */
export interface Lease {
  owner: string;
  leaseS: number;
}

/** Where a run on a branch starts: a checkpoint of its thread, with the phase outputs it replaced. */
export interface ForkedFrom {
  checkpoint_id: string;
  /** The run that wrote the checkpoint. */
  run_id: string | null;
  outputs: Record<string, string>;
  /**
   * The checkpoint is where its run ended: the new run follows that run with a message of its own (an edited later
   * message), rather than replacing what came after the checkpoint. Absent on rows written before it existed.
   */
  follows_end?: boolean;
  /** The phases with an output at the checkpoint, in the order they ran: what the new run starts with. */
  phases?: string[];
}

/**
 * A decision that a run resumes with, and the checkpoint it answers: the one the run paused at. A run that has gone
 * on from there (and perhaps stopped at a gate again) is not answered by it.
 */
export interface PendingResume {
  decision: GateDecision;
  checkpointId: string | null;
}

/** A run's row, as the engine executes it. */
export interface RunRecord {
  id: string;
  threadId: string;
  projectId: string;
  agent: string;
  model: string;
  message: string;
  projectPath: string | null;
  status: RunStatus;
  /** The how-many-th execution of the run this is (1 for the first). */
  attempts: number;
  /** How many of its takeovers followed a clean stop of its process (handOver): they count for no failure. */
  handovers: number;
  /** Event ids up to here may have reached clients; an execution continues after it. */
  seqReserved: number;
  /** The id of the event that ended the run's last leg (its gate_waiting, or its final event). */
  eventSeq: number;
  forkedFrom: ForkedFrom | null;
  resume: PendingResume | null;
  endReason: string | null;
  /** The W3C `traceparent` of the run's trace, which every leg continues (null: tracing was off when it began). */
  traceContext: string | null;
  /** The version of its agent the run runs (a stored agent's number, a built-in's hash); null: before versions. */
  agentVersion: string | null;
  /** The content hash of the manifest the run is pinned to; null: the built-in by name (runs before versions). */
  manifestHash: string | null;
  /** What its thread is called when the leg starts (its first message unless renamed): a publish step names by it. */
  threadName: string | null;
  /** The run this one compares: its tool calls and gates are answered from that run's record (docs/compare.md). */
  comparisonOf: string | null;
  /** The dataset item an experiment runs (docs/compare.md): answered from the item's copy of its record instead. */
  experimentItem: string | null;
}

export interface NewRun {
  id: string;
  threadId: string;
  /** The thread to create with the run (its project); null: the run goes on an existing thread. */
  newThread: { projectId: string } | null;
  agent: string;
  model: string;
  message: string;
  projectPath: string | null;
  createdBy: string;
  forkedFrom: ForkedFrom | null;
  /** Whether the model is the local runtime's (models/model-ref.ts parseModel). */
  localRuntime: boolean;
  /** The most local-runtime runs the user may have going at once; null: no limit. */
  localCap: number | null;
  /** What to do when the thread is busy: its active run, or runs queued (contracts/runs.ts MultitaskStrategy). */
  strategy: MultitaskStrategy;
  /** The run's trace context (tracing/run-trace.ts startRunTrace), null while tracing is off. */
  traceContext: string | null;
  /** What the run runs, resumed on whatever is published since (services/agent-directory.ts). */
  agentVersion: string;
  manifestHash: string;
  /** A try of an unsaved source in the studio: its new thread is left out of the default thread list. */
  draft: boolean;
  /** The run this one compares (docs/compare.md): it runs that run's input again and acts on nothing. */
  comparisonOf: string | null;
  /**
   * The dataset item this run answers in an experiment (docs/compare.md): it acts on nothing, answered from the item's
   * copy of its run's record; its new thread is marked with `experimentId`.
   */
  experimentItem: { itemId: string; experimentId: string } | null;
}

export type StartOutcome =
  | { outcome: 'started' }
  /** The thread has this run running or waiting: nothing was written. */
  | { outcome: 'active'; active: { id: string; status: RunStatus } }
  /** The user has `going` local-runtime runs already: nothing was written. */
  | { outcome: 'over_limit'; going: number }
  /** `enqueue`: written as queued behind `active` (the thread's active run, or the first queued), `position`-th. */
  | { outcome: 'queued'; active: { id: string; status: RunStatus }; position: number }
  /** `rollback`: the active run cannot be removed (a person decided at one of its stops, or a tool call ran). */
  | { outcome: 'not_rollbackable'; active: { id: string; status: RunStatus }; why: 'decision' | 'tool_call' };

/** One stored event: the id clients saw (`seq`), its type and its JSON text exactly as it was sent. */
export interface StoredEvent {
  seq: number;
  type: string;
  data: string;
}

export interface NewEvent extends StoredEvent {
  runId: string;
}

/** The leg of a run that records something: the process executing it (the run's owner) and the attempt it executes. */
export interface LegHolder {
  owner: string;
  attempt: number;
}

/** An event a leg stores as it goes (its last one goes with the statement that ends the leg instead). */
export interface LegEvent extends NewEvent {
  holder: LegHolder;
}

/** How a leg of a run ends at a gate. */
export interface PauseAtGate {
  gate: PendingGate;
  /** The checkpoint the graph paused at: the one a decision answers. */
  checkpointId: string | null;
  /** When the gate expires (null: it waits until someone decides). */
  expiresAt: Date | null;
}

/** How a run ends. */
export interface RunEnd {
  status: Extract<RunStatus, 'completed' | 'rejected' | 'error'>;
  output?: string | null;
  errorDetail?: string | null;
  endReason?: string | null;
}

/** Where a run stands, for a reader that follows its events. */
export interface RunProgress {
  status: RunStatus;
  /** The id of the event that ended its last leg. */
  eventSeq: number;
  /** A process executes it (or will: a lapsed lease is taken over). */
  executing: boolean;
}

export interface RunStore {
  /** Writes a new run's row (and a new thread's), leased to `lease`; see StartOutcome. */
  start(run: NewRun, lease: Lease, seqReserved: number): Promise<StartOutcome>;
  get(runId: string): Promise<RunRecord | undefined>;
  progress(runId: string): Promise<RunProgress | undefined>;
  /**
   * Starts the next queued run of a thread (of any thread with none given) whose runs ahead have ended: queued →
   * running, leased to `lease`. Under the thread's lock, so a thread never has two runs going.
   */
  claimQueued(lease: Lease, seqReserved: number, threadId?: string): Promise<RunRecord | undefined>;
  /** Claims one running run whose lease lapsed (its process died), with its attempts counted up. */
  claimLapsed(lease: Lease): Promise<RunRecord | undefined>;
  /** Renews the lease of every run `lease.owner` executes; returns their ids. */
  renewLeases(lease: Lease): Promise<string[]>;
  /**
   * Lets runs of `owner` be taken over at once (by any process, `owner` included, as claimLapsed() does): all of them
   * when it stops, or the ones in `only`.
   */
  releaseLeases(owner: string, only?: readonly string[]): Promise<void>;
  /**
   * A process that stops lets its runs be taken over at once, as releaseLeases() does, and counts a handover for each,
   * which RUN_MAX_ATTEMPTS leaves out: a shutdown (an upgrade, one process at a time) is no failure of the run's.
   */
  handOver(owner: string): Promise<void>;
  /** Ids up to `upTo` may be handed out by the leg `holder`: a takeover continues after them. */
  reserveSeq(runId: string, holder: LegHolder, upTo: number): Promise<void>;
  /**
   * Ends a leg at a gate (running → waiting_approval), with the leg's last events (its gate_waiting last) stored in
   * the same statement; false, and nothing stored, when the run is no longer running in the leg `holder`: another
   * owner, or a later attempt (the same process may have taken the run back while an older leg of it still ran).
   */
  pause(runId: string, holder: LegHolder, pause: PauseAtGate, events: NewEvent[]): Promise<boolean>;
  /** Ends a run (running → completed, rejected or error) with its last events, as pause() does. */
  finish(runId: string, holder: LegHolder, end: RunEnd, events: NewEvent[]): Promise<boolean>;
  /** Cancels a queued, running or waiting run and closes its open nodes; false when it had finished already. */
  cancel(runId: string, reason: string | null): Promise<boolean>;
  /** Records a routing rule's match on the run (once, however often it is written). */
  addRoute(runId: string, route: RouteMatch): Promise<void>;
  /** Locks the run's row and hands its stop at a gate to `work` (undefined when it does not wait at one). */
  atStop<T>(runId: string, work: (stop: StopTx | undefined) => Promise<T>): Promise<T>;
  /** Locks one waiting run whose gate's deadline has passed (that no one else holds) and hands it to `work`. */
  atExpiredStop<T>(work: (stop: StopTx) => Promise<T>): Promise<T | undefined>;
}

/** One decision recorded at a stop. */
export interface StopDecision {
  kind: GateDecisionKind;
  decidedBy: { id: string | null; name: string };
  /** Each edit opens a round: approvals count within one. */
  round: number;
  edits: Record<string, string> | null;
  /** A tool call's approval or edit: the arguments it approved (canonical JSON) and their SHA-256. */
  arguments: string | null;
  argumentsSha256: string | null;
  decidedAt: Date;
}

export interface NewStopDecision {
  kind: GateDecisionKind;
  decidedBy: { id: string | null; name: string };
  role: Role | null;
  round: number;
  reason: string | null;
  edits: Record<string, string> | null;
  response: string | null;
  /** respond: the phase that runs again; expire route: the phase it continues at. */
  routeTo: string | null;
  /** expire: what the expiry does. */
  outcome: 'approve' | 'reject' | 'route' | null;
  /** A decision on a tool call: the call, and the arguments it runs with (canonical JSON) and their SHA-256. */
  toolCallId: string | null;
  arguments: string | null;
  argumentsSha256: string | null;
  /** The door it came through when not the API's own: `slack`. */
  via: 'slack' | 'email' | null;
}

/** A run waiting at a gate, locked for a decision: reads and writes in one transaction. */
export interface StopTx {
  readonly run: RunRecord & { pendingGate: PendingGate; gateCheckpointId: string | null };
  decisions(): Promise<StopDecision[]>;
  /** false: this person approved in this round already (nothing recorded). */
  record(decision: NewStopDecision): Promise<boolean>;
  /** The edited text is what the approvers still to come see. */
  showEdits(edits: Record<string, string>): Promise<void>;
  /** A tool call's edited arguments are what the approvers still to come see. */
  showToolCall(call: PendingToolCall): Promise<void>;
  /** waiting_approval → running, leased to `lease`, to resume with `resume`. */
  claim(resume: PendingResume, lease: Lease, seqReserved: number): Promise<void>;
}

/** A run's stored events, read (they are written with the rest of a run's records: RunWriteStore). */
export interface EventStore {
  /** A run's events after `afterSeq`, oldest first, at most `limit`. */
  after(runId: string, afterSeq: number, limit: number): Promise<StoredEvent[]>;
  /** The id of the run's last stored event (0 before its first). */
  lastSeq(runId: string): Promise<number>;
}

/** A node row as an execution leaves it: written whole each time, so a retried or repeated write changes nothing. */
export interface NodeWrite {
  runId: string;
  /** `<node>#<visit>`: a node entered again in the same run (after a respond) gets a row of its own. */
  key: string;
  node: string;
  status: NodeStatus;
  output: string;
  /**
   * When it was entered and exited, as `performance.now()` of this process: a store turns them into the database's
   * time, as its clock read when the write is sent less how long ago they were. A row kept from an earlier write
   * keeps the time it was entered.
   */
  enteredAt: number;
  exitedAt: number | null;
  /** When the phase's first answer token arrived (as `enteredAt`); null until one did, and for a gate. */
  firstTokenAt: number | null;
  queueWaitMs: number | null;
  promptTokens: number | null;
  outputTokens: number | null;
  warnings: NodeWarning[];
  thinking: string | null;
}

export interface NodeStore {
  /** Drops the rows a dead process left running (they run again) and says which nodes they were. */
  dropRunning(runId: string): Promise<string[]>;
  /** Closes every row of the run still open, with `status`. */
  closeOpen(runId: string, status: NodeStatus): Promise<void>;
}

/** A model's turn in a phase that calls tools, recorded once it is whole: a node that runs again replays it. */
export interface ModelTurnRecord {
  text: string;
  toolCalls: { name: string; arguments: Record<string, unknown> }[];
}

/** A tool call as recorded before it runs and after: what a node that runs again replays instead of calling. */
export interface ToolCallRecord {
  /** `<run>:<node>:<visit>:<turn>:<place in the turn>`: the same whichever process runs the node again. */
  id: string;
  runId: string;
  node: string;
  /** `<server>.<tool>` */
  tool: string;
  /** The arguments the model gave, canonical (RFC 8785), and their SHA-256. */
  arguments: string;
  argumentsSha256: string;
  policy: 'allow' | 'ask' | 'granted' | 'covered' | 'deny';
  /** In a comparison: what it did with the call (contracts/tools.ts ToolReplay); null in any other run. */
  replay: ToolReplay | null;
  /** Read-only or idempotent: a run that stopped mid-call may run it again without asking. */
  rerunnable: boolean;
  /** The decision it runs (or does not run) with, once a person or an expiry took it. */
  decision: GateDecision | null;
  /** How often it was started. */
  attempts: number;
  result: { text: string; isError: boolean } | null;
}

export type NewToolCall = Omit<ToolCallRecord, 'decision' | 'attempts' | 'result'>;

/** What a comparison answers from (docs/compare.md): the record of the run it compares. */
export interface ComparedRecord {
  /** The run's tool calls that have a result, in the order they were made. */
  calls: { tool: string; argumentsSha256: string; result: { text: string; isError: boolean } }[];
  /** Its gates' decisions, as its events carry them, oldest first. */
  decisions: GateDecisionEvent[];
}

/** Reads the record of a run a comparison compares, or a dataset item's copy of one. */
export interface ComparedRecordStore {
  recordOf(runId: string): Promise<ComparedRecord>;
  itemRecordOf(itemId: string): Promise<ComparedRecord>;
}

export interface ToolCallStore {
  turn(id: string): Promise<ModelTurnRecord | undefined>;
  /** Keeps the first turn recorded under `id` (a repeated write changes nothing). */
  saveTurn(id: string, runId: string, turn: ModelTurnRecord): Promise<void>;
  /** Records a call before anything happens to it, and returns the record: this one (`created`), or an earlier one. */
  propose(call: NewToolCall): Promise<{ record: ToolCallRecord; created: boolean }>;
  /**
   * Keeps the first decision recorded for the call, or one recorded later for a later start of it (a higher
   * `rerun_after`: a person said it may run again after it was cut off), so that the record holds what was last
   * approved. A decision recorded again (a replay) changes nothing.
   */
  decide(id: string, decision: GateDecision): Promise<void>;
  /** Counts a start of the call, if it has been started `attempts` times so far: false when it had been since. */
  start(id: string, attempts: number): Promise<boolean>;
  /** Keeps the first result recorded for the call. */
  finish(id: string, result: { text: string; isError: boolean }): Promise<void>;
  /**
   * Whether a person allowed `tool` for the rest of the thread (a grant not revoked) who still holds `role` or higher
   * on the thread's project: a grant is worth what its granter may decide now, not when she gave it.
   */
  granted(threadId: string, tool: string, role: Role): Promise<boolean>;
}

/**
 * One model call for the usage accounting (docs/observability.md#accounting), priced when it was made. Its project,
 * its user (who started the run) and its agent are its run's, filled in by the store.
 */
export interface ModelCallWrite {
  /** Made by the recorder: a write repeated after a failure stores the call once. */
  id: string;
  runId: string;
  node: string;
  provider: string;
  model: string;
  inputTokens: number | null;
  outputTokens: number | null;
  durationMs: number;
  loadMs: number | null;
  generationMs: number | null;
  queueWaitMs: number | null;
  /** The price the cost was computed from (USD per million tokens); null when the model had none. */
  inputPerMtok: number | null;
  outputPerMtok: number | null;
  costUsd: number | null;
}

export interface ModelCallRecord extends ModelCallWrite {
  projectId: string;
  userId: string | null;
  agent: string;
}

export interface ModelCallStore {
  /** A run's calls, in the order they were recorded. */
  ofRun(runId: string): Promise<ModelCallRecord[]>;
}

/** What the runs of a process record as they go, stored together. */
export interface RunWrites {
  events: readonly LegEvent[];
  /** At most one write per run and key: the last state of each row. */
  nodes: readonly NodeWrite[];
  calls: readonly ModelCallWrite[];
}

/**
 * Stores a batch of run records at once (in PostgreSQL, one statement and one commit for all three kinds), each safe
 * to write again: an event already stored under its run and id is left as it is, a node row ends as its last write
 * says, a model call is stored once under its id, and a call whose run no longer exists is left out.
 *
 * An event is stored only while its run is still its leg's: the run's attempt is the leg's, and no other process
 * holds it (a cancel lets go of it: the leg's events until it hears of the cancel are still stored, under ids before
 * the run_cancelled). A process that stalled past its lease and wakes after the run was taken over stores nothing
 * more: otherwise its late events, under ids before the new leg's, would land behind readers who had read past them.
 */
export interface RunWriteStore {
  write(records: RunWrites): Promise<void>;
}

/** A question an MCP server asks mid-call, as the run that made the call records it (contracts/tool-questions.ts). */
export interface NewToolQuestion {
  runId: string;
  /** The id of the run's `tool_question` event: the stop is `<run id>:<wait seq>`. */
  waitSeq: number;
  node: string;
  callId: string;
  tool: string;
  server: string;
  mode: 'form' | 'url';
  message: string;
  requestedSchema: Record<string, unknown> | null;
  url: string | null;
  expiresInS: number;
  /** The process holding the call (the run's owner then): the question is pending only while the run is its. */
  owner: string;
}

/** The questions of runs, shared by every process: the one holding the call waits on its row. */
export interface ToolQuestionStore {
  ask(question: NewToolQuestion): Promise<void>;
  /** The answer once a person gave it (null while it is still asked). */
  answer(
    runId: string,
    waitSeq: number,
  ): Promise<{ action: QuestionAction; content: Record<string, unknown> | null; by: string | null } | null>;
  /** Gives up on a question still asked (past its time, or its call ended): false when an answer came first. */
  close(runId: string, waitSeq: number, state: 'expired' | 'withdrawn'): Promise<boolean>;
  /** Withdraws the questions an earlier leg of the run asked and never heard back on (its process died). */
  withdrawAll(runId: string): Promise<number>;
}
