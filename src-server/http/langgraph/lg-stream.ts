import type { RunEvent } from '../../contracts/events';
import { REJECTED_RUN_OUTPUT, type PendingGate } from '../../contracts/runs';
import { phaseMessageId } from './lg-ids';
import { lgInterrupt } from './lg-interrupts';
import { runMessages, threadValues, type LgMessage } from './lg-messages';
import type { StreamMode } from './lg-schemas';

/** One event of a LangGraph stream: `event:` its mode, `data:` its JSON, `id:` where it resumes from. */
export interface LgEvent {
  event: string;
  data: unknown;
  id?: string;
}

/** Where a client stopped: the k-th LangGraph event derived from the run's stored event `seq`. */
export interface LgCursor {
  seq: number;
  k: number;
}

/**
 * `Last-Event-ID` as these streams number their events (`<seq>-<k>`); a plain integer (an id of the native stream)
 * means everything derived from that event. Anything else (`-1`, nothing) is the start.
 */
export function parseCursor(raw: string | undefined): LgCursor {
  const match = /^(\d{1,10})(?:-(\d{1,6}))?$/.exec(raw?.trim() ?? '');
  if (!match) return { seq: 0, k: Number.POSITIVE_INFINITY };
  return { seq: Number(match[1]), k: match[2] === undefined ? Number.POSITIVE_INFINITY : Number(match[2]) };
}

const after = (seq: number, k: number, cursor: LgCursor) => seq > cursor.seq || (seq === cursor.seq && k > cursor.k);

export interface RunContext {
  runId: string;
  threadId: string;
  /** The thread's name, which its interrupts' descriptions begin with. */
  threadName: string | null;
  graphId: string;
  assistantId: string;
  /** The run's message: its human message. */
  message: string | null;
  /** The messages of the thread's runs before this one. */
  earlier: LgMessage[];
  /** The outputs the run starts with: a fork's at its branch point. */
  inherited: [string, string][];
  /** The node a rejection ends the run at (lg-views.ts `rejectionEnd`): its output is the run's last message. */
  rejectionEnd: string | null;
}

/** Modes a derived event belongs to; `custom` carries the service's own events as they are. */
type Derived = { mode: 'values' | 'updates' | 'messages' | 'custom' | 'events' | 'error'; data: unknown };

/**
 * The LangGraph stream of one run, folded from its stored events: each stored event gives the same LangGraph events
 * wherever and whenever it is read, numbered `<seq>-<k>`, so a replay equals the live stream on any process and a
 * client resumes exactly after what it has. The fold holds the run's outputs so far (tokens build a phase's output,
 * a restarted phase begins again, an edit replaces them).
 */
export class LgRunFold {
  private readonly outputs: Map<string, string>;
  private step = 0;

  constructor(private readonly run: RunContext) {
    this.outputs = new Map(run.inherited);
  }

  /** The run's values now: the thread's messages up to this run's, and the outputs of its phases. */
  values(): Record<string, unknown> {
    const mine = runMessages(this.run.runId, this.run.message, this.outputs);
    return threadValues([...this.run.earlier, ...mine], Object.fromEntries(this.outputs));
  }

  /** The stored event's LangGraph events in `modes`, those after `cursor` only. */
  next(seq: number, event: RunEvent, modes: ReadonlySet<StreamMode>, cursor: LgCursor): LgEvent[] {
    const derived = this.derive(seq, event);
    const wanted = (mode: Derived['mode']) =>
      mode === 'error' ||
      (mode === 'messages' ? modes.has('messages-tuple') || modes.has('messages') : modes.has(mode as StreamMode));
    return derived
      .map((d, k) => ({ d, k }))
      .filter(({ d, k }) => wanted(d.mode) && after(seq, k, cursor))
      .map(({ d, k }) => ({ event: d.mode, data: d.data, id: `${seq}-${k}` }));
  }

  private derive(seq: number, event: RunEvent): Derived[] {
    const { runId, threadId, graphId, assistantId } = this.run;
    const custom: Derived = { mode: 'custom', data: event };
    switch (event.type) {
      case 'run_start':
        return [{ mode: 'values', data: this.values() }, custom];
      case 'node_enter':
        this.step += 1;
        this.outputs.set(event.node, '');
        return [
          custom,
          {
            mode: 'events',
            data: {
              event: 'on_chain_start',
              name: event.node,
              run_id: runId,
              metadata: { langgraph_node: event.node, langgraph_step: this.step },
            },
          },
        ];
      case 'token': {
        this.outputs.set(event.node, (this.outputs.get(event.node) ?? '') + event.text);
        const chunk = {
          type: 'AIMessageChunk',
          id: phaseMessageId(runId, event.node),
          name: event.node,
          content: event.text,
          tool_call_chunks: [],
          additional_kwargs: {},
          response_metadata: {},
        };
        const metadata = {
          langgraph_node: event.node,
          langgraph_step: this.step,
          langgraph_checkpoint_ns: '',
          checkpoint_ns: '',
          tags: [],
          run_id: runId,
          thread_id: threadId,
          graph_id: graphId,
          assistant_id: assistantId,
        };
        return [{ mode: 'messages', data: [chunk, metadata] }];
      }
      case 'run_resumed':
        // The phase that was cut off runs again from its start: its partial output is replaced.
        if (event.node) this.outputs.set(event.node, '');
        return [custom];
      case 'node_exit': {
        const output = this.outputs.get(event.node) ?? '';
        const message = runMessages(runId, null, [[event.node, output]]);
        return [
          custom,
          { mode: 'updates', data: { [event.node]: { messages: message, outputs: { [event.node]: output } } } },
          { mode: 'values', data: this.values() },
          {
            mode: 'events',
            data: {
              event: 'on_chain_end',
              name: event.node,
              run_id: runId,
              metadata: { langgraph_node: event.node, langgraph_step: this.step },
            },
          },
        ];
      }
      case 'gate_edited':
        for (const [node, text] of Object.entries(event.edits)) this.outputs.set(node, text);
        return [custom, { mode: 'values', data: this.values() }];
      case 'gate_waiting':
      case 'tool_waiting': {
        const { type: _type, ...gate } = event;
        const interrupts = [lgInterrupt(runId, seq, gate as PendingGate, this.run.threadName)];
        return [
          custom,
          { mode: 'updates', data: { __interrupt__: interrupts } },
          { mode: 'values', data: { ...this.values(), __interrupt__: interrupts } },
        ];
      }
      case 'run_rejected': {
        // The terminal node ends the run without an event of its own; its output is what the checkpoint holds.
        const end = this.run.rejectionEnd;
        if (!end) return [custom, { mode: 'values', data: this.values() }];
        this.outputs.set(end, REJECTED_RUN_OUTPUT);
        const message = runMessages(runId, null, [[end, REJECTED_RUN_OUTPUT]]);
        return [
          custom,
          { mode: 'updates', data: { [end]: { messages: message, outputs: { [end]: REJECTED_RUN_OUTPUT } } } },
          { mode: 'values', data: this.values() },
        ];
      }
      case 'run_done':
      case 'run_cancelled':
        return [custom, { mode: 'values', data: this.values() }];
      case 'run_error': {
        const [, name, message] = /^([A-Za-z_][\w.]*): ([\s\S]*)$/.exec(event.error_detail) ?? [];
        return [custom, { mode: 'error', data: { error: name ?? 'Error', message: message ?? event.error_detail } }];
      }
      default:
        return [custom];
    }
  }
}
