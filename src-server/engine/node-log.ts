import type { NodeStatus, NodeWarning } from '../contracts/runs';
import type { Logger } from '../log';
import type { CallUsage } from '../models/model-client';
import { BatchWriter } from './batch-writer';
import type { IsTransient } from './retry';
import type { NodeStore, NodeWrite } from '../storage/types';

/** A model phase's figures, as its node row and its node_exit event carry them. */
export interface NodeFigures {
  queue_wait_ms: number | null;
  prompt_tokens: number | null;
  output_tokens: number | null;
}

/**
 * The node rows of every run this process executes, written in shared batches: each write is a node's whole row,
 * keyed by run, node and visit, so writes may be folded, repeated after a failure, or repeated by another process
 * that takes the run over, and the row ends as the last one says. Nothing waits for them but the moments that must
 * (a node's end before the run's, a gate's pause).
 */
export class NodeLog {
  private readonly writer: BatchWriter<NodeWrite>;

  constructor(store: NodeStore, options: { isTransient: IsTransient; log: Logger }) {
    this.writer = new BatchWriter<NodeWrite>({
      write: (rows) => store.write(rows),
      isTransient: options.isTransient,
      log: options.log,
      what: 'node rows',
      maxBatch: 500,
      // Only each row's last state matters: several writes of one node in a batch go as one.
      fold: (rows) => [...new Map(rows.map((row) => [`${row.runId}/${row.key}`, row])).values()],
    });
  }

  forRun(runId: string): RunNodes {
    return new RunNodes(runId, this.writer);
  }

  flush(): Promise<void> {
    return this.writer.flush();
  }

  close(): Promise<void> {
    return this.writer.close();
  }
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
    private readonly writer: BatchWriter<NodeWrite>,
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
    if (open) open.row.output += text;
  }

  thinking(node: string, text: string): void {
    const open = this.open.get(node);
    if (open) open.row.thinking = (open.row.thinking ?? '') + text;
  }

  /** Adds one model call's figures to its node's (a node may call more than once, e.g. after a takeover). */
  usage(node: string, usage: CallUsage): void {
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
    this.save({ ...open.row, status, output, exitedAt: performance.now() });
  }

  /** A gate's row stays open while it waits; its decision closes it, in whichever process resumes the run. */
  pauseAt(gate: string): void {
    const open = this.open.get(gate);
    if (!open) return;
    this.open.delete(gate);
    this.save({ ...open.row, status: 'waiting_approval' });
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
    for (const { row } of this.open.values()) this.save({ ...row, status, exitedAt: now });
    this.open.clear();
  }

  /** Resolves once every row written so far is stored. */
  drain(): Promise<void> {
    return this.writer.flush();
  }

  private save(row: NodeWrite): void {
    this.writer.push({ ...row, warnings: [...row.warnings] });
  }
}
