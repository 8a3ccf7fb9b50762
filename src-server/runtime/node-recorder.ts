import type { NodeStatus, NodeWarning, PendingGate } from '../contracts/runs';
import type { NodeFigures, RunsRepository } from '../db/runs.repository';
import type { CallUsage } from '../models/model-client';
import { getLogger } from '../log';

const log = getLogger('svc.sse');

/** Token text reaches the database at most this often per node: a crash loses at most this much. */
const OUTPUT_FLUSH_MS = 500;

/**
 * Keeps a run's node rows in step with its execution: a row per node entered, its output saved every
 * 500 ms while tokens arrive, its status when it ends. Writes run one after another in order, off the
 * token path: nothing waits for them but the moments that must (a node's end, a gate, the run's end).
 */
export class NodeRecorder {
  private writes: Promise<unknown> = Promise.resolve();
  private readonly openRows = new Map<string, number>();
  private readonly output = new Map<string, string>();
  private readonly dirty = new Set<string>();
  /** Figures of the nodes that made model calls (or streamed reasoning, or got a warning). */
  private readonly nodeFigures = new Map<string, NodeFigures>();
  private readonly thinkingDirty = new Set<string>();
  private flushTimer?: NodeJS.Timeout;
  /** The first node write that failed: the run must not be reported as done with rows that say otherwise. */
  failure?: unknown;

  constructor(
    private readonly runId: string,
    private readonly runs: RunsRepository,
  ) {}

  /** Database writes run one after another in call order. */
  private persist(write: () => Promise<unknown>): Promise<void> {
    const next = this.writes.then(write).catch((error) => {
      this.failure ??= error;
      log.error(`run ${this.runId}: database write failed`, error);
    });
    this.writes = next;
    return next.then(() => undefined);
  }

  enter(node: string): void {
    this.output.set(node, '');
    this.nodeFigures.delete(node);
    // Not awaited: the model call starts at once; later writes for this node queue behind the insert.
    void this.persist(async () => this.openRows.set(node, await this.runs.enterNode(this.runId, node, 'running')));
    this.flushTimer ??= setInterval(() => this.flushOutputs(), OUTPUT_FLUSH_MS);
  }

  token(node: string, text: string): void {
    this.output.set(node, (this.output.get(node) ?? '') + text);
    this.dirty.add(node);
  }

  /** The node's figures so far, or undefined when it made no model call. */
  figures(node: string): NodeFigures | undefined {
    return this.nodeFigures.get(node);
  }

  private figuresOf(node: string): NodeFigures {
    let figures = this.nodeFigures.get(node);
    if (!figures) {
      figures = { queue_wait_ms: null, prompt_tokens: null, output_tokens: null, warnings: [], thinking: null };
      this.nodeFigures.set(node, figures);
    }
    return figures;
  }

  /** Adds one model call's figures to its node's (a node may call more than once, e.g. after a takeover). */
  usage(node: string, usage: CallUsage): void {
    const figures = this.figuresOf(node);
    const add = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : a + b);
    figures.queue_wait_ms = add(figures.queue_wait_ms, usage.queue_wait_ms);
    figures.prompt_tokens = add(figures.prompt_tokens, usage.prompt_tokens);
    figures.output_tokens = add(figures.output_tokens, usage.output_tokens);
    this.saveFigures(node);
  }

  thinking(node: string, text: string): void {
    const figures = this.figuresOf(node);
    figures.thinking = (figures.thinking ?? '') + text;
    this.thinkingDirty.add(node);
  }

  /** Stored at once: a warning must outlive a crash that follows it. */
  warning(node: string, warning: NodeWarning): void {
    this.figuresOf(node).warnings.push(warning);
    this.saveFigures(node);
  }

  private saveFigures(node: string): void {
    const figures = this.nodeFigures.get(node);
    if (!figures) return;
    this.thinkingDirty.delete(node);
    const copy = { ...figures, warnings: [...figures.warnings] };
    void this.persist(async () => {
      const row = this.openRows.get(node);
      if (row !== undefined) await this.runs.saveNodeFigures(row, copy);
    });
  }

  exit(node: string, status: NodeStatus, output: string): Promise<void> {
    this.dirty.delete(node);
    if (this.thinkingDirty.has(node)) this.saveFigures(node);
    return this.persist(async () => {
      const row = this.openRows.get(node);
      // Forgotten only once closed: a row whose write failed is closed with the others when the run ends.
      if (row !== undefined) await this.runs.setNodeStatus(row, status, output, true);
      this.openRows.delete(node);
    });
  }

  /** The gate row stays open while it waits; it is closed by the decision. */
  pauseAtGate(gate: PendingGate): Promise<void> {
    return this.persist(async () => {
      const row = this.openRows.get(gate.node);
      this.openRows.delete(gate.node);
      if (row !== undefined) await this.runs.setNodeStatus(row, 'waiting_approval', null, false);
    });
  }

  /** A decided gate closes the row its earlier execution left open. */
  gateDecided(gate: string, status: NodeStatus): Promise<void> {
    return this.persist(async () => {
      const row = await this.runs.openNodeRow(this.runId, gate);
      if (row !== undefined) await this.runs.setNodeStatus(row, status, null, true);
    });
  }

  /**
   * The open node rows, closed with `status` (when the run fails or is cancelled): those this execution
   * opened keep the output they had, and any other row of the run still open is closed too.
   */
  closeOpenNodes(status: NodeStatus): Promise<void> {
    return this.persist(async () => {
      const rows = [...this.openRows.entries()];
      this.openRows.clear();
      for (const [node, row] of rows) {
        const figures = this.nodeFigures.get(node);
        if (figures) await this.runs.saveNodeFigures(row, figures).catch(() => undefined);
        await this.runs.setNodeStatus(row, status, this.output.get(node) ?? null, true).catch(() => undefined);
      }
      await this.runs.closeOpenNodes(this.runId, status);
    });
  }

  /** Saves what is pending and waits for every write so far. */
  async drain(): Promise<void> {
    this.flushOutputs();
    clearInterval(this.flushTimer);
    this.flushTimer = undefined;
    await this.writes;
  }

  private flushOutputs(): void {
    for (const node of this.dirty) {
      const output = this.output.get(node) ?? '';
      void this.persist(async () => {
        const row = this.openRows.get(node);
        if (row !== undefined) await this.runs.saveNodeOutput(row, output);
      });
    }
    this.dirty.clear();
    for (const node of this.thinkingDirty) this.saveFigures(node);
  }
}
