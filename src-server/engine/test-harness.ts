import { randomUUID } from 'node:crypto';
import { DEFAULT_LAYOUTS } from '../assets/asset-compiler';
import type { CatalogEntry } from '../assets/catalog';
import type { Manifest, Phase } from '../contracts/assets';
import { DEFAULT_GATE_POLICY, type GatePolicy } from '../contracts/gate-policy';
import { NO_TOOLS } from '../contracts/tools';
import type { RunEvent } from '../contracts/events';
import { DEFAULT_PROJECT_ID } from '../contracts/tenancy';
import type { Logger } from '../log';
import type { CallUsage, ModelCall, ModelClient, ModelTurn } from '../models/model-client';
import { PriceTable } from '../models/model-prices';
import { createToolbox } from '../tools/toolbox';
import { MemoryCheckpointer } from '../storage/memory/memory-checkpointer';
import { MemoryStores } from '../storage/memory/memory-stores';
import { newRun } from '../storage/run-fixture';
import { Engine, type EngineDeps, type RunStart } from './engine';

/**
 * The run engine on its in-memory stores, with a scripted model: what its unit tests (engine/*.test.ts) run on,
 * without a database. Several engines on one harness are processes of one cluster.
 */

/** An error the stores throw that the engine must take for a database gone for a moment. */
export class StoreAwayError extends Error {
  override name = 'StoreAwayError';
}

const silent: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  enabled: () => false,
} as unknown as Logger;

const phase = (id: string, kind: Phase['kind'], gate?: Partial<GatePolicy>): Phase => ({
  id,
  name: id,
  kind,
  description: `The ${id} phase.`,
  expected_output: `${id} notes`,
  classification_options: [],
  approval_question: kind === 'gate' ? 'Publish this review?' : undefined,
  required_approval_context: kind === 'gate' ? ['analysis'] : [],
  routes: [],
  ...(kind === 'gate' ? { gate: { ...DEFAULT_GATE_POLICY, ...gate } } : {}),
});

/** An agent on the default layout (intake, analysis, gate, output), with the gate's options given. */
export function reviewAgent(name = 'review', gate: Partial<GatePolicy> = {}): CatalogEntry {
  const layout = DEFAULT_LAYOUTS.agent;
  const manifest: Manifest = {
    kind: 'agent',
    name,
    description: 'Reviews a change.',
    category: 'review',
    graph: layout.name,
    instructions: 'You review changes.',
    source: `assets/agents/${name}.md`,
    tools: NO_TOOLS,
    phases: layout.nodes.map((node) => phase(node.id, node.kind, gate)),
  };
  return { manifest, layout };
}

/** A model that answers every call with the scripted tokens, and keeps what it was asked. */
export class ScriptedModel implements ModelClient {
  tokens: string[] = ['ok'];
  /** Milliseconds between tokens. */
  delayMs = 0;
  /** The next call fails with this error. */
  failNext?: Error;
  /** Calls that hang until they are aborted (a process that stalls, or is as good as dead). */
  hangs: (call: ModelCall) => boolean = () => false;
  /** Turns that call tools, answered in order to calls offered tools; then the scripted tokens. */
  toolTurns: ModelTurn['tool_calls'][] = [];
  readonly calls: ModelCall[] = [];

  async stream(call: ModelCall): Promise<ModelTurn> {
    this.calls.push(call);
    const failure = this.failNext;
    this.failNext = undefined;
    if (failure) throw failure;
    if (this.hangs(call)) {
      await new Promise((_, reject) => call.signal.addEventListener('abort', () => reject(call.signal.reason)));
    }
    const toolCalls = call.tools?.length ? this.toolTurns.shift() : undefined;
    if (toolCalls) {
      call.onUsage?.({ ...this.usage(call), output_tokens: toolCalls.length });
      return { text: '', tool_calls: toolCalls };
    }
    let text = '';
    for (const token of this.tokens) {
      call.signal.throwIfAborted();
      if (this.delayMs) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
      call.signal.throwIfAborted();
      call.onToken(token);
      text += token;
    }
    call.onUsage?.({ ...this.usage(call), output_tokens: this.tokens.length });
    return { text, tool_calls: [] };
  }

  /** What each call reports: 10 prompt tokens, as a cloud provider would (no slot wait, no load). */
  private usage(call: ModelCall): CallUsage {
    return {
      model: call.model,
      queue_wait_ms: null,
      prompt_tokens: 10,
      output_tokens: 0,
      duration_ms: 1,
      load_ms: null,
      generation_ms: null,
    };
  }

  /** The user message of each call, in order. */
  prompts(): string[] {
    return this.calls.map((c) => c.messages.at(-1)?.content ?? '');
  }
}

export class Harness {
  readonly stores: MemoryStores;
  readonly checkpointer = new MemoryCheckpointer();
  readonly model = new ScriptedModel();
  /** The price table the engines price model calls by: `fake-model` costs $1 / $2 per million tokens. */
  readonly prices = new PriceTable({ 'fake-model': { input_per_mtok: 1, output_per_mtok: 2 } });
  /** The project tools on the run's project path as it is (a folder of the test's); no MCP server is reached. */
  readonly toolbox = createToolbox({
    mcp: {
      tools: () => Promise.reject(new Error('the engine tests reach no MCP server')),
      call: () => Promise.reject(new Error('the engine tests reach no MCP server')),
      close: async () => undefined,
    },
    projectFolder: ({ projectPath }, use) => use(projectPath, true),
    policyFloor: async () => [],
    callTimeoutMs: 10_000,
  });
  private readonly entries = new Map<string, CatalogEntry>();
  private readonly engines: Engine[] = [];

  constructor(entries: CatalogEntry[] = [reviewAgent()], now: () => number = Date.now) {
    this.stores = new MemoryStores(now);
    for (const entry of entries) this.entries.set(entry.manifest.name, entry);
  }

  /** A process of the cluster: an engine on the shared stores, hearing their notices. */
  engine(options: Partial<EngineDeps> = {}): Engine {
    const engine = new Engine({
      owner: `process-${this.engines.length + 1}-${randomUUID()}`,
      runs: this.stores.runStore,
      events: this.stores.eventStore,
      nodes: this.stores.nodeStore,
      checkpointer: this.checkpointer,
      models: this.model,
      toolbox: this.toolbox,
      toolCalls: this.stores.toolCalls,
      comparedRuns: this.stores.comparedRuns,
      questions: this.stores.questions,
      records: this.stores.writeStore,
      prices: this.prices,
      agentOf: async (run) => this.entries.get(run.agent),
      projectContext: async ({ projectPath }) => `files of ${projectPath}`,
      nodeConfigs: async () => new Map(),
      isTransient: (error) => error instanceof StoreAwayError,
      runTimeoutS: 60,
      leaseS: 30,
      maxAttempts: 3,
      maxActive: 100,
      databaseWaitS: 5,
      pollMs: 20,
      log: silent,
      failures: silent,
      ...options,
    });
    this.stores.listen({
      cancelled: (runId) => engine.cancelled(runId),
      runReady: (threadId) => void engine.startQueued(threadId),
      eventsStored: (runId, seq) => engine.events.stored(runId, seq),
    });
    this.engines.push(engine);
    return engine;
  }

  /** The start of a run as a service admits it: on a new thread of the default project unless one is named. */
  start(engine: Engine, message = 'review this', extra: Partial<RunStart> = {}) {
    // `extra` may name the project too: newRun passes every field it is given through.
    const run: RunStart = { projectId: DEFAULT_PROJECT_ID, ...newRun({ message, createdBy: 'ann', ...extra }) };
    return { run, outcome: engine.start(run) };
  }

  /** The run's events after `afterId`, read as a client does, to its end or its gate. */
  async read(engine: Engine, runId: string, afterId = 0): Promise<{ id: number; event: RunEvent }[]> {
    const events: { id: number; event: RunEvent }[] = [];
    for await (const batch of engine.join(runId, afterId)) {
      for (const e of batch) events.push({ id: e.id, event: JSON.parse(e.data) as RunEvent });
    }
    return events;
  }

  /** Waits until `check` holds (a few seconds at most). */
  async until(check: () => boolean | Promise<boolean>, what = 'the condition'): Promise<void> {
    const deadline = Date.now() + 5000;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.engines.map((engine) => engine.shutdown()));
  }
}

/** `[type:node]` of each event, consecutive tokens folded into one: the shape of a run's stream. */
export function shape(events: { event: RunEvent }[]): string[] {
  const out: string[] = [];
  for (const { event } of events) {
    const label = 'node' in event ? `${event.type}:${event.node}` : event.type;
    if (event.type === 'token' && out.at(-1) === label) continue;
    out.push(label);
  }
  return out;
}
