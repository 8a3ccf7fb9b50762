import type { NodeStatus, NodeWarning } from '../contracts/runs';
import type { CallUsage } from '../models/model-client';
import type { ModelCallLog } from './model-call-log';
import type { RunWriter } from './run-writer';
import type { NodeWrite } from '../storage/types';

/** A model phase's figures, as its node row and its node_exit event carry them. */
export interface NodeFigures {
  queue_wait_ms: number | null;
  prompt_tokens: number | null;
  output_tokens: number | null;
}

/** Told when a node this execution entered ends (its row closed), with the seconds since it was entered. */
export type NodeEnded = (node: string, status: NodeStatus, seconds: number) => void;

/** A running node's output so far reaches its row this often: a process that dies loses at most this much. */
const OUTPUT_FLUSH_MS = 500;
/**
 * Each write of a running node's output rewrites all of it: past this size a row waits one more interval for each
 * time as much again, so a huge output costs the database a few times its size, not its square.
 */
const OUTPUT_FLUSH_BYTES = 256 * 1024;

/**
 * The node rows of every run this process executes, written with the rest of what runs record (run-writer.ts), in
 * batches shared by all of them: each write is a node's whole row,
 * keyed by run, node and visit, so writes may be folded, repeated after a failure, or repeated by another process
 * that takes the run over, and the row ends as the last one says. A running node's output so far is written every
 * half second, all of them in one statement. Nothing waits for the writes but the moments that must (a node's end
 * before the run's, a gate's pause).
 */
export class NodeLog {
  private readonly outputs = new GrowingOutputs();
  private readonly timer: NodeJS.Timeout;

  /** `calls`: where each model call a node reports goes for the usage accounting. */
  constructor(
    private readonly writer: RunWriter,
    private readonly calls?: ModelCallLog,
  ) {
    this.timer = setInterval(() => this.saveGrown(), OUTPUT_FLUSH_MS);
    this.timer.unref();
  }

  /**
   * `waitMs`: how long a leg waits for its node rows to be stored while the database is away; `ended`: told of each
   * node's end (the metrics' phase durations).
   */
  forRun(runId: string, waitMs: number, ended?: NodeEnded): RunNodes {
    return new RunNodes(runId, this.writer, this.outputs, waitMs, ended, this.calls);
  }

  /** Hands the running nodes' latest output to the writer, and stops the half-second writes. */
  close(): void {
    clearInterval(this.timer);
    for (const row of this.outputs.due(Infinity)) this.writer.push({ kind: 'node', row: snapshot(row) });
  }

  private saveGrown(): void {
    for (const row of this.outputs.due(performance.now())) this.writer.push({ kind: 'node', row: snapshot(row) });
  }
}

/** The rows of running nodes whose output grew since their row was last written, and when that was. */
class GrowingOutputs {
  private readonly grown = new Set<NodeWrite>();
  private readonly writtenAt = new WeakMap<NodeWrite, number>();

  grew(row: NodeWrite): void {
    this.grown.add(row);
  }

  /** The row was just written whole: nothing of it waits. */
  written(row: NodeWrite): void {
    this.grown.delete(row);
    this.writtenAt.set(row, performance.now());
  }

  /** The grown rows whose next write is due at `now`, each taken as written then. */
  due(now: number): NodeWrite[] {
    const rows: NodeWrite[] = [];
    for (const row of this.grown) {
      const wait = OUTPUT_FLUSH_MS * Math.max(1, row.output.length / OUTPUT_FLUSH_BYTES);
      // Half an interval early is on time: the timer's ticks do not fall exactly on a row's due time.
      if (now + OUTPUT_FLUSH_MS / 2 < (this.writtenAt.get(row) ?? 0) + wait) continue;
      rows.push(row);
      this.written(row);
    }
    return rows;
  }
}

function snapshot(row: NodeWrite): NodeWrite {
  return { ...row, warnings: [...row.warnings] };
}

interface OpenNode {
  row: NodeWrite;
}

/** One execution's view of its run's node rows: the hooks of its graph report here. */
export class RunNodes {
  /** The node entered last under each name (a node never runs twice at once in a run). */
  private readonly open = new Map<string, OpenNode>();

  constructor(
    private readonly runId: string,
    private readonly writer: RunWriter,
    private readonly outputs: GrowingOutputs,
    private readonly waitMs: number,
    private readonly ended?: NodeEnded,
    private readonly calls?: ModelCallLog,
  ) {}

  enter(node: string, visit: number): void {
    const row: NodeWrite = {
      runId: this.runId,
      key: `${node}#${visit}`,
      node,
      status: 'running',
      output: '',
      enteredAt: performance.now(),
      exitedAt: null,
      firstTokenAt: null,
      queueWaitMs: null,
      promptTokens: null,
      outputTokens: null,
      warnings: [],
      thinking: null,
    };
    this.open.set(node, { row });
    this.save(row);
  }

  token(node: string, text: string): void {
    const open = this.open.get(node);
    if (!open) return;
    // Written with the row's next write (its output's, its figures', its end's): no statement of its own.
    open.row.firstTokenAt ??= performance.now();
    open.row.output += text;
    this.outputs.grew(open.row);
  }

  thinking(node: string, text: string): void {
    const open = this.open.get(node);
    if (open) open.row.thinking = (open.row.thinking ?? '') + text;
  }

  /**
   * Adds one model call's figures to its node's (a node may call more than once, e.g. after a takeover), and records
   * the call for the usage accounting.
   */
  usage(node: string, usage: CallUsage): void {
    this.calls?.record(this.runId, node, usage);
    const open = this.open.get(node);
    if (!open) return;
    const add = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : a + b);
    open.row.queueWaitMs = add(open.row.queueWaitMs, usage.queue_wait_ms);
    open.row.promptTokens = add(open.row.promptTokens, usage.prompt_tokens);
    open.row.outputTokens = add(open.row.outputTokens, usage.output_tokens);
    this.save(open.row);
  }

  /** Stored at once: a warning must outlive a crash that follows it. */
  warning(node: string, warning: NodeWarning): void {
    const open = this.open.get(node);
    if (!open) return;
    open.row.warnings = [...open.row.warnings, warning];
    this.save(open.row);
  }

  /** The figures of the node's model calls, or undefined when it made none. */
  figures(node: string): NodeFigures | undefined {
    const row = this.open.get(node)?.row;
    if (!row || (row.queueWaitMs === null && row.promptTokens === null && row.outputTokens === null)) return undefined;
    return { queue_wait_ms: row.queueWaitMs, prompt_tokens: row.promptTokens, output_tokens: row.outputTokens };
  }

  exit(node: string, status: NodeStatus, output: string): void {
    const open = this.open.get(node);
    if (!open) return;
    this.open.delete(node);
    const exitedAt = performance.now();
    this.save(open.row, { status, output, exitedAt });
    this.ended?.(node, status, (exitedAt - open.row.enteredAt) / 1000);
  }

  /** A gate's row stays open while it waits; its decision closes it, in whichever process resumes the run. */
  pauseAt(gate: string): void {
    const open = this.open.get(gate);
    if (!open) return;
    this.open.delete(gate);
    this.save(open.row, { status: 'waiting_approval' });
  }

  gateDecided(gate: string, visit: number, status: NodeStatus): void {
    const now = performance.now();
    this.save({
      runId: this.runId,
      key: `${gate}#${visit}`,
      node: gate,
      status,
      output: '',
      enteredAt: now,
      exitedAt: now,
      firstTokenAt: null,
      queueWaitMs: null,
      promptTokens: null,
      outputTokens: null,
      warnings: [],
      thinking: null,
    });
  }

  /** The nodes this execution left open, closed with `status` and the output they had (a failure, a cancel). */
  closeOpen(status: NodeStatus): void {
    const now = performance.now();
    for (const { row } of this.open.values()) {
      this.save(row, { status, exitedAt: now });
      this.ended?.(row.node, status, (now - row.enteredAt) / 1000);
    }
    this.open.clear();
  }

  /**
   * Resolves once every row and model call written so far is stored (a run's end is read with its usage whole);
   * rejects when the database stays away past the wait.
   */
  async drain(): Promise<void> {
    await this.writer.flush(this.waitMs);
  }

  /**
   * Writes a row's state now, with `changes`; a snapshot of its output waiting for the half-second write would be
   * older than this one, so it is dropped.
   */
  private save(row: NodeWrite, changes: Partial<NodeWrite> = {}): void {
    this.outputs.written(row);
    this.writer.push({ kind: 'node', row: { ...snapshot(row), ...changes } });
  }
}
