import { Annotation, END, interrupt, START, StateGraph, type LangGraphRunnableConfig } from '@langchain/langgraph';
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import { type Edge, type Phase, type RoutingRule, type RuleSource } from '../../contracts/assets';
import { DEFAULT_GATE_POLICY } from '../../contracts/gate-policy';
import {
  decisionPath,
  type GateDecision,
  type NodeConfig,
  type NodeStatus,
  type NodeWarning,
  type PendingGate,
  type RouteRule,
  REJECTED_RUN_OUTPUT,
} from '../../contracts/runs';
import type { CatalogEntry } from '../../assets/catalog';
import type {
  CallUsage,
  ChatMessage,
  LoadingInfo,
  MessagePart,
  ModelCall,
  ModelClient,
  QueueInfo,
  RetryInfo,
  TrimReport,
} from '../../models/model-client';
import { THREAD_WITHOUT_CHECKPOINTS } from '../../storage/thread-without-checkpoints';
import type { ToolCallStore } from '../../storage/types';
import { sha256Hex } from '../../tools/canonical-arguments';
import type { Toolbox, ToolScope } from '../../tools/toolbox';
import { firstMatchingRule } from './routing';
import { fillPublishArgument } from './publish-placeholders';
import { runPublishStep, runToolLoop, type ToolHooks, type ToolLoop } from './tool-loop';
import type { ComparedRun, ComparedDecision } from '../comparison';

/** A node entered more often than this in one run means routing rules loop. */
export const MAX_NODE_VISITS = 8;

export class RoutingLoopError extends Error {
  override name = 'RoutingLoopError';
}

/**
 * The graph state, checkpointed per thread. `history` accumulates across the runs of a thread
 * (earlier messages and answers); the other channels are reset by each new run's input.
 */
export const RunState = Annotation.Root({
  /** The run that wrote this state: a process taking a run over tells its checkpoint from an earlier run's. */
  run_id: Annotation<string>(),
  message: Annotation<string>(),
  project_context: Annotation<string>(),
  history: Annotation<ChatMessage[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  outputs: Annotation<Record<string, string>>(),
  visits: Annotation<Record<string, number>>(),
  route: Annotation<string | null>(),
  /** The rule that chose `route` and where it came from: a thread's history names it. */
  route_rule: Annotation<RouteRule | null>(),
  approved: Annotation<boolean | null>(),
  /** The reason given with the last gate decision: a rejected run ends with it. */
  decision_reason: Annotation<string | null>(),
  last_node: Annotation<string | null>(),
  /** node id → a reviewer's feedback (a gate's respond) that the node reads when it runs again, once. */
  feedback: Annotation<Record<string, string>>(),
  /**
   * The last gate the run went past (approved, rejected, or by its expiry): what comes after it ran on text that gate
   * was shown. A fork from a later checkpoint re-enters it, so that nothing past a gate runs on text it never saw.
   */
  passed_gate: Annotation<string | null>(),
  /** Phases whose output a fork replaced since the last gate decision: the next gate shows them too. */
  edited: Annotation<string[]>(),
  /** phase → SHA-256 of its output as a gate approved it: a publish step writing exactly that text is covered. */
  approved_hashes: Annotation<Record<string, string>>(),
});
export type RunStateValue = typeof RunState.State;

export function initialState(runId: string, message: string, projectContext: string): Partial<RunStateValue> {
  return {
    run_id: runId,
    message,
    project_context: projectContext,
    outputs: {},
    visits: {},
    route: null,
    route_rule: null,
    approved: null,
    decision_reason: null,
    last_node: null,
    feedback: {},
    passed_gate: null,
    edited: [],
    approved_hashes: {},
  };
}

/** What the graph reports to the run that executes it: events, persistence, cancellation. */
export interface NodeHooks extends ToolHooks {
  readonly signal: AbortSignal;
  /**
   * `visit`: the how-many-th time the run enters this node (a phase sent back to runs again). `announce` false: the
   * node goes on after a pause at one of its tool calls, and its node_enter was sent when it began.
   */
  enter(node: string, visit: number, announce?: boolean): Promise<void>;
  token(node: string, text: string): void;
  /** The node entered last ends (a node never runs twice at once in one run). */
  exit(node: string, status: NodeStatus, output: string): Promise<void>;
  queued(node: string, info: QueueInfo): void;
  trimmed(node: string, report: TrimReport): void;
  thinking(node: string, text: string): void;
  loading(node: string, info: LoadingInfo): void;
  retrying(node: string, info: RetryInfo): void;
  warning(node: string, warning: NodeWarning): void;
  usage(node: string, usage: CallUsage): void;
  routeMatched(from: string, to: string, rule: RoutingRule, source: RuleSource): Promise<void>;
  /** True exactly once, when this execution resumes the given gate after a decision. */
  takeResume(gate: string): boolean;
  /** `inOriginal`: a comparison took the decision of the run it compares (docs/compare.md). */
  gateDecided(
    gate: string,
    visit: number,
    decision: GateDecision,
    inOriginal?: ComparedDecision['inOriginal'],
  ): Promise<void>;
}

/**
 * What one execution of a run gives its graph's nodes: the graph is compiled once per agent, and each execution
 * passes this in its config (see `executionConfig`).
 */
export interface Execution {
  /** Names this run in the model layer's debug logs. */
  runId: string;
  /** The run's project: the local-runtime queue is fair between organisations and their projects. */
  tenant: string;
  model: string;
  models: ModelClient;
  /**
   * The phases' configuration, read while LangGraph takes its first steps (its first checkpoint): a phase waits for it
   * only when it needs it, before its model call.
   */
  nodeConfigs: Promise<ReadonlyMap<string, NodeConfig>>;
  hooks: NodeHooks;
  threadId: string;
  /** What the thread is called: a publish step may name its file after it. */
  threadName: string;
  /** The tools of the run's phases, their record, and where they act. */
  tools: { toolbox: Toolbox; store: ToolCallStore; scope: ToolScope };
  /**
   * A comparison's view of the run it compares (docs/compare.md), read while the leg begins: its gates take that
   * run's decisions and its tool calls that run's answers. Null for any other run.
   */
  comparison: Promise<ComparedRun> | null;
}

const EXECUTION = 'svc_execution';

/**
 * The config that runs the thread's graph for one execution (beside LangGraph's own keys): from `checkpointId`, or
 * from the thread's latest checkpoint, which a thread created with the run (`threadIsNew`) does not have to read.
 */
export function executionConfig(
  threadId: string,
  execution: Execution,
  at: { checkpointId?: string; threadIsNew?: boolean } = {},
) {
  return {
    configurable: {
      thread_id: threadId,
      ...(at.checkpointId ? { checkpoint_id: at.checkpointId } : {}),
      ...(at.threadIsNew ? { [THREAD_WITHOUT_CHECKPOINTS]: true } : {}),
      [EXECUTION]: execution,
    },
  };
}

function executionOf(config: LangGraphRunnableConfig): Execution {
  const execution = config.configurable?.[EXECUTION] as Execution | undefined;
  // Reading a thread's history builds no execution: a node that runs without one is a bug, not a run.
  if (!execution) throw new Error('a node of the graph ran outside an execution of a run');
  return execution;
}

function labels(phase: Phase, config: NodeConfig | undefined): string[] {
  const custom =
    config?.classification_labels
      ?.split(',')
      .map((l) => l.trim())
      .filter(Boolean) ?? [];
  return custom.length ? custom : phase.classification_options;
}

function systemPrompt(instructions: string, phase: Phase, config: NodeConfig | undefined): string {
  const parts = [instructions.trim()];
  parts.push(`## Current phase: ${phase.name} (${phase.id})`);
  if (config?.instructions_override?.trim()) {
    parts.push(config.instructions_override.trim());
  } else {
    if (phase.description) parts.push(phase.description);
    if (phase.expected_output) parts.push(`Expected output: ${phase.expected_output}`);
  }
  const options = labels(phase, config);
  if (options.length) {
    parts.push(
      `Classify your result: start your answer with exactly one of these labels on its own line: ${options.join(', ')}.`,
    );
  }
  return parts.join('\n\n');
}

/**
 * The run's message, the project context and the earlier phases' outputs, in parts: when the message alone is
 * over a local model's context budget, the oldest output is cut first, then the next ones, then the project
 * context; never the run's own message.
 */
function userPrompt(state: RunStateValue, node: string): ChatMessage {
  const parts: MessagePart[] = [{ text: state.message }];
  const earlier = Object.entries(state.outputs ?? {});
  if (state.project_context)
    parts.push(
      { text: '\n\n## Project context\n' },
      { text: state.project_context, trimmable: { name: 'project_context', order: earlier.length } },
    );
  if (earlier.length) parts.push({ text: '\n\n## Earlier phases of this run\n' });
  earlier.forEach(([id, text], order) =>
    parts.push({ text: `${order ? '\n\n' : ''}### ${id}\n` }, { text, trimmable: { name: `output:${id}`, order } }),
  );
  // Sent back from a gate: the reviewer's words come last, after the answer they are about (### <node> above).
  const feedback = state.feedback?.[node];
  if (feedback) {
    parts.push({
      text:
        `\n\n## Reviewer's feedback on your previous answer\n${feedback}\n\n` +
        'Answer again, taking this feedback into account.',
    });
  }
  return { role: 'user', content: parts.map((p) => p.text).join(''), parts };
}

/** What a gate shows its approver: each required item with the text the run produced for it. */
export function gateContext(phase: Phase, state: RunStateValue): PendingGate {
  const outputs = state.outputs ?? {};
  const latest = state.last_node ? (outputs[state.last_node] ?? '') : '';
  const context: Record<string, string> = {};
  for (const item of phase.required_approval_context) context[item] = outputs[item] ?? latest;
  if (phase.required_approval_context.length === 0 && state.last_node) context[state.last_node] = latest;
  // Text a person put in through a fork is shown whatever the gate asks for: the approver decides on all of it.
  for (const node of state.edited ?? []) if (Object.hasOwn(outputs, node)) context[node] ??= outputs[node]!;
  const policy = phase.gate ?? DEFAULT_GATE_POLICY;
  return {
    node: phase.id,
    question: phase.approval_question ?? `Approve the result of ${state.last_node ?? 'the previous phase'}?`,
    required_context: phase.required_approval_context,
    context,
    decide_role: policy.decide_role,
    approvals_needed: policy.approvals,
    on_expiry: policy.expiry,
  };
}

/** The phase a gate's respond sends the run back to: the one whose edge leads into the gate. */
export function phaseBeforeGate(edges: Edge[], gate: string): string | undefined {
  return edges.find((e) => e.to === gate)?.from;
}

function staticTarget(edges: Edge[], from: string, condition?: string): string {
  const edge = edges.find(
    (e) => e.from === from && (condition === undefined ? !e.condition : e.condition === condition),
  );
  return edge?.to ?? END;
}

/**
 * Compiles the LangGraph StateGraph of an agent or command, once: every execution of its runs (a first start, a
 * resume, a takeover in another process) passes what is its own in the config (`executionConfig`), and the checkpoint
 * carries the state.
 */
export function compileGraph(entry: CatalogEntry, checkpointer: BaseCheckpointSaver) {
  const { manifest, layout } = entry;
  const phases = new Map(manifest.phases.map((p) => [p.id, p]));
  const isFinal = (node: string) => !layout.edges.some((e) => e.from === node && e.to !== END);

  const countVisit = (state: RunStateValue, node: string) => {
    const visits = (state.visits?.[node] ?? 0) + 1;
    if (visits > MAX_NODE_VISITS) {
      throw new RoutingLoopError(
        `node "${node}" was entered ${visits} times in one run: its routing rules form a loop`,
      );
    }
    return { ...state.visits, [node]: visits };
  };

  const finalHistory = (state: RunStateValue, node: string, output: string) =>
    isFinal(node)
      ? {
          history: [
            { role: 'user' as const, content: state.message },
            { role: 'assistant' as const, content: output },
          ],
        }
      : {};

  const graph = new StateGraph(RunState);

  for (const node of layout.nodes) {
    const phase = phases.get(node.id);
    if (!phase) throw new Error(`graph ${layout.name} has node ${node.id} but ${manifest.name} has no phase for it`);

    if (node.kind === 'llm') {
      graph.addNode(node.id, async (state: RunStateValue, runConfig: LangGraphRunnableConfig) => {
        const { hooks, models, ...options } = executionOf(runConfig);
        const config = (await options.nodeConfigs).get(node.id);
        const visits = countVisit(state, node.id);
        const visit = visits[node.id]!;
        // A node that paused at a tool call goes on where it stopped: it said node_enter when it began.
        await hooks.enter(node.id, visit, !hooks.takeResume(node.id));
        const messages: ChatMessage[] = [
          { role: 'system', content: systemPrompt(manifest.instructions, phase, config) },
          ...(state.history ?? []),
          userPrompt(state, node.id),
        ];
        const toolLoop = async (): Promise<ToolLoop> => ({
          runId: options.runId,
          comparison: options.comparison && (await options.comparison),
          threadId: options.threadId,
          node: node.id,
          visit,
          toolset: await options.tools.toolbox.forPhase(options.tools.scope, manifest, phase, hooks.signal),
          store: options.tools.store,
          hooks,
        });
        const call: Omit<ModelCall, 'messages' | 'tools'> = {
          model: options.model,
          label: `run ${options.runId} node ${node.id}`,
          tenant: options.tenant,
          runId: options.runId,
          signal: hooks.signal,
          onToken: (text) => hooks.token(node.id, text),
          onQueued: (info) => hooks.queued(node.id, info),
          onTrimmed: (report) => hooks.trimmed(node.id, report),
          // Reasoning goes to the node's record and the stream, never into `output`: routing, the gate and the
          // next phases see the answer alone.
          onThinking: (text) => hooks.thinking(node.id, text),
          onLoading: (info) => hooks.loading(node.id, info),
          onRetry: (info) => hooks.retrying(node.id, info),
          onWarning: (warning) => hooks.warning(node.id, warning),
          onUsage: (usage) => hooks.usage(node.id, usage),
        };
        let output: string;
        if (phase.publish) {
          const from = phase.publish.from;
          const fill = (value: string) =>
            fillPublishArgument(value, {
              runId: options.runId,
              threadId: options.threadId,
              threadName: options.threadName,
            });
          const text = state.outputs?.[from] ?? '';
          const publish = await runPublishStep(
            await toolLoop(),
            phase.publish,
            text,
            state.approved_hashes?.[from],
            fill,
          );
          if (!publish.published) {
            hooks.warning(node.id, {
              code: 'not_published',
              message: `the approved ${from} was not written with ${phase.publish.tool}: ${publish.answer}`,
            });
          }
          output = text;
          hooks.token(node.id, output);
        } else {
          // A phase whose tools this run cannot reach (no project path) only writes text, as one without tools does.
          const loop = phase.tools?.tools.length ? await toolLoop() : undefined;
          output = loop?.toolset.specs.length
            ? await runToolLoop(loop, models, call, messages, phase.tools!.max_tool_calls)
            : (await models.stream({ ...call, messages })).text;
        }
        // Saved overrides replace the asset's own routes for this node; without them the asset's routes apply.
        const source: RuleSource = config?.routing_overrides.length ? 'override' : 'asset';
        const rule = firstMatchingRule(source === 'override' ? config!.routing_overrides : phase.routes, output);
        await hooks.exit(node.id, 'completed', output);
        if (rule) await hooks.routeMatched(node.id, rule.target, rule, source);
        const { [node.id]: _read, ...feedback } = state.feedback ?? {};
        return {
          outputs: { ...state.outputs, [node.id]: output },
          visits,
          route: rule?.target ?? null,
          route_rule: rule ? { rule, source } : null,
          last_node: node.id,
          feedback,
          ...finalHistory(state, node.id, output),
        };
      });
      graph.addConditionalEdges(
        node.id as never,
        (state: RunStateValue) => state.route ?? staticTarget(layout.edges, node.id),
      );
    } else if (node.kind === 'gate') {
      graph.addNode(node.id, async (state: RunStateValue, runConfig: LangGraphRunnableConfig) => {
        const { hooks, comparison } = executionOf(runConfig);
        // The first pass ends in interrupt(), which throws: its count of the visit is not kept, so the pass that
        // resumes counts the same visit again, and both name the same node row.
        const visits = countVisit(state, node.id);
        if (!hooks.takeResume(node.id)) await hooks.enter(node.id, visits[node.id]!);
        // A comparison takes the decision the run it compares took at this visit of the gate, without stopping; a
        // gate that run never got past stops it for a person, as any run.
        const taken = comparison ? (await comparison).decisionAt(node.id, visits[node.id]!) : undefined;
        // Throws on the first pass (the run pauses, the checkpoint keeps it); returns the decision on resume.
        const decision = taken?.decision ?? interrupt<PendingGate, GateDecision>(gateContext(phase, state));
        await hooks.gateDecided(node.id, visits[node.id]!, decision, taken?.inOriginal);
        const decided = { decision_reason: decision.reason, visits, edited: [] };
        const path = decisionPath(decision);
        if (path === 'route') {
          // Respond, or an expiry that routes: on at the phase named. A respond comes back to this gate; an expiry
          // that routes goes past it.
          const to = decision.to ?? phaseBeforeGate(layout.edges, node.id)!;
          const feedback = decision.response ? { ...state.feedback, [to]: decision.response } : state.feedback;
          const passed = decision.kind === 'respond' ? (state.passed_gate ?? null) : node.id;
          return { ...decided, approved: null, route: to, route_rule: null, feedback, passed_gate: passed };
        }
        // An edit replaces the outputs of the phases the gate showed: what the next phases read.
        const outputs = decision.edits ? { ...state.outputs, ...decision.edits } : state.outputs;
        // What the approvers saw, by hash: a publish step after the gate writes exactly that text without asking again.
        const shown = Object.keys(gateContext(phase, state).context).filter((id) => Object.hasOwn(outputs ?? {}, id));
        const approvedHashes =
          path === 'approve'
            ? { ...state.approved_hashes, ...Object.fromEntries(shown.map((id) => [id, sha256Hex(outputs[id]!)])) }
            : state.approved_hashes;
        return {
          ...decided,
          approved: path === 'approve',
          route: null,
          route_rule: null,
          outputs,
          passed_gate: node.id,
          approved_hashes: approvedHashes,
        };
      });
      graph.addConditionalEdges(
        node.id as never,
        (state: RunStateValue) =>
          state.route ?? staticTarget(layout.edges, node.id, state.approved ? 'approved' : 'rejected'),
      );
    } else {
      // A terminal node (e.g. the cancellation after a rejected gate) ends the run quietly:
      // A rejection's stream goes straight from gate_rejected to run_rejected (docs/run-lifecycle.md#gates).
      graph.addNode(node.id, async (state: RunStateValue) => {
        const output = state.approved === false ? REJECTED_RUN_OUTPUT : 'Stopped.';
        return { outputs: { ...state.outputs, [node.id]: output }, last_node: node.id, route: null, route_rule: null };
      });
      graph.addEdge(node.id as never, END);
    }
  }
  graph.addEdge(START, layout.entry as never);
  return graph.compile({ checkpointer });
}

export type CompiledRunGraph = ReturnType<typeof compileGraph>;
