import type { RoutingRule } from '../contracts/assets';
import { TERMINAL_EVENTS, type RunEvent } from '../contracts/events';
import type { NodeStatus, PendingGate } from '../contracts/runs';
import type { RunsRepository } from '../db/runs.repository';
import { getLogger } from '../log';
import type { CallUsage, LoadingInfo, QueueInfo, TrimReport } from '../models/model-client';
import type { NodeWarning } from '../contracts/runs';
import type { RunEventStream } from './event-stream';
import type { GateDecision, NodeHooks } from './graph-builder';
import { NodeRecorder } from './node-recorder';

const log = getLogger('svc.sse');

/**
 * Event ids are reserved in the run's row in blocks of this size, ahead of use, so that a process taking a
 * run over continues after every id a client could have seen (events still in memory when a process dies
 * are lost, but their ids are not reused).
 */
export const SEQ_BLOCK = 10_000;

export interface SessionOptions {
  runId: string;
  threadId: string;
  agent: string;
  model: string;
  /** The run's last event id so far: this execution's first event gets the next one. */
  lastSeq: number;
  /** Ids up to here are reserved in the run's row. */
  reserved: number;
  /** This process, which holds the run's lease. */
  owner: string;
  runs: RunsRepository;
  events: RunEventStream;
  /** The gate whose decision this execution resumes, if it resumes one. */
  resumeGate?: string;
}

/**
 * One execution of a run in this process (a first start, a resume after a gate, or a takeover): it numbers
 * the run's events and appends them to the event stream, keeps the node rows in step (NodeRecorder), and
 * carries the abort signal. The graph reports through `hooks`.
 */
export class RunSession {
  readonly controller = new AbortController();
  /** Why the run was stopped from outside, when it was. */
  stopReason?: 'cancelled' | 'timeout' | 'shutdown' | 'lost';
  readonly runId: string;
  readonly threadId: string;
  readonly agent: string;
  readonly model: string;
  private readonly nodes: NodeRecorder;
  private readonly runs: RunsRepository;
  private readonly events: RunEventStream;
  private readonly owner: string;
  private seq: number;
  private reserved: number;
  private resumeGate?: string;
  private ended = false;
  private reserving = false;

  constructor(options: SessionOptions) {
    ({ runId: this.runId, threadId: this.threadId, agent: this.agent, model: this.model } = options);
    ({ runs: this.runs, events: this.events, owner: this.owner, resumeGate: this.resumeGate } = options);
    this.seq = options.lastSeq;
    this.reserved = options.reserved;
    this.nodes = new NodeRecorder(this.runId, this.runs);
    this.events.open(this.runId, this.seq);
  }

  get lastEventId(): number {
    return this.seq;
  }

  get isEnded(): boolean {
    return this.ended;
  }

  emit(event: RunEvent): void {
    this.seq++;
    if (this.seq > this.reserved - SEQ_BLOCK / 2) this.reserveMore();
    this.events.append(this.runId, this.seq, event);
    if (TERMINAL_EVENTS.includes(event.type)) this.ended = true;
  }

  /** Saves pending node output and waits for every node write so far. */
  drain(): Promise<void> {
    return this.nodes.drain();
  }

  /** The first node write that failed, if one did. */
  get writeFailure(): unknown {
    return this.nodes.failure;
  }

  closeOpenNodes(status: NodeStatus): Promise<void> {
    return this.nodes.closeOpenNodes(status);
  }

  pauseAtGate(gate: PendingGate): Promise<void> {
    return this.nodes.pauseAtGate(gate);
  }

  private reserveMore(): void {
    if (this.reserving) return;
    this.reserving = true;
    const upTo = this.reserved + SEQ_BLOCK;
    this.runs
      .reserveSeq(this.runId, this.owner, upTo)
      .then(() => {
        this.reserved = upTo;
      })
      .catch((error) => log.warn(`run ${this.runId}: reserving event ids failed: ${(error as Error).message}`))
      .finally(() => {
        this.reserving = false;
      });
  }

  readonly hooks: NodeHooks = {
    signal: this.controller.signal,

    enter: async (node) => {
      this.emit({ type: 'node_enter', node });
      this.nodes.enter(node);
    },

    token: (node, text) => {
      this.nodes.token(node, text);
      this.emit({ type: 'token', node, text });
    },

    exit: async (node, status, output) => {
      const figures = this.nodes.figures(node);
      this.emit(
        figures
          ? {
              type: 'node_exit',
              node,
              status,
              queue_wait_ms: figures.queue_wait_ms,
              prompt_tokens: figures.prompt_tokens,
              output_tokens: figures.output_tokens,
            }
          : { type: 'node_exit', node, status },
      );
      await this.nodes.exit(node, status, output);
    },

    queued: (node: string, info: QueueInfo) => this.emit({ type: 'queue', node, ...info }),

    trimmed: (node: string, report: TrimReport) => this.emit({ type: 'context_trimmed', node, ...report }),

    thinking: (node: string, text: string) => {
      this.nodes.thinking(node, text);
      this.emit({ type: 'thinking', node, text });
    },

    loading: (node: string, info: LoadingInfo) => this.emit({ type: 'model_loading', node, ...info }),

    warning: (node: string, warning: NodeWarning) => {
      this.nodes.warning(node, warning);
      this.emit({ type: 'node_warning', node, ...warning });
    },

    usage: (node: string, usage: CallUsage) => this.nodes.usage(node, usage),

    routeMatched: async (from: string, to: string, rule: RoutingRule) => {
      this.emit({ type: 'route_matched', from, to, rule });
      await this.runs.addRoute(this.runId, { from, to, rule, at: Date.now() / 1000 });
    },

    takeResume: (gate) => {
      if (this.resumeGate !== gate) return false;
      this.resumeGate = undefined;
      return true;
    },

    gateDecided: async (gate: string, decision: GateDecision) => {
      this.emit(decisionEvent(gate, decision));
      // A gate sent back (respond, or an expiry that routes) is passed for now: it is reached again later.
      await this.nodes.gateDecided(
        gate,
        decision.approved === null ? 'completed' : decision.approved ? 'approved' : 'rejected',
      );
    },
  };
}

/** The event a decision at a gate adds to the run's stream: one kind of event per kind of decision. */
function decisionEvent(node: string, decision: GateDecision): RunEvent {
  const { reason, by } = decision;
  const kind = decision.kind ?? (decision.approved ? 'approve' : 'reject');
  // `by` stays beside `deciders` for the clients of API 1.1 (a list on approvals, one name on the others).
  const deciders = by ? { deciders: by } : {};
  switch (kind) {
    case 'expire':
      return { type: 'gate_expired', node, outcome: decision.outcome ?? 'reject', to: decision.to ?? null };
    case 'respond':
      return {
        type: 'gate_responded',
        node,
        to: decision.to ?? '',
        response: decision.response ?? '',
        reason,
        ...deciders,
        ...(by?.[0] ? { by: by[0] } : {}),
      };
    case 'edit':
      return { type: 'gate_edited', node, reason, edits: decision.edits ?? {}, ...deciders, ...(by ? { by } : {}) };
    case 'reject':
      return { type: 'gate_rejected', node, reason, ...deciders, ...(by?.[0] ? { by: by[0] } : {}) };
    default:
      return { type: 'gate_approved', node, reason, ...deciders, ...(by ? { by } : {}) };
  }
}
