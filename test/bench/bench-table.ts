/**
 * What every part of the bench shares: a row of its table, how figures are written in it, and the quiet hooks with
 * which LangGraph runs the service's graph outside the service (in process, or in LangGraph's own server).
 */
import type { Execution, NodeHooks } from '../../src-server/engine';
import { MemoryStores } from '../../src-server/storage/memory/memory-stores';
import type { ModelClient } from '../../src-server/models/model-client';

/** One row of the table `npm run bench` prints (run.ts). */
export interface BenchRow {
  benchmark: string;
  service: string;
  baseline: string;
  ratio: string;
  target: string;
  met: string;
}

export const ms = (value: number) => `${value.toFixed(1)} ms`;

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export const median = (values: number[]) => percentile(values, 50);

/** Hooks that report nothing but each token (to `token`): the graph alone, without the service around it. */
export function quietHooks(token: (node: string, text: string) => void): NodeHooks {
  return {
    signal: new AbortController().signal,
    enter: async () => undefined,
    token,
    exit: async () => undefined,
    queued: () => undefined,
    trimmed: () => undefined,
    thinking: () => undefined,
    loading: () => undefined,
    retrying: () => undefined,
    warning: () => undefined,
    usage: () => undefined,
    routeMatched: async () => undefined,
    takeResume: () => false,
    gateDecided: async () => undefined,
    record: (_what, work) => work(),
    traced: (_tool, _callId, work) => work(),
    event: () => undefined,
    decisionFor: () => undefined,
    ask: async () => ({ action: 'decline' }),
  };
}

/** The tools part of an execution whose phases call none (the summary command's). */
const noTools: Execution['tools'] = {
  toolbox: {
    forPhase: () => Promise.reject(new Error('the benchmarked command calls no tools')),
    close: async () => undefined,
  },
  store: new MemoryStores().toolCalls,
  scope: { projectId: '', projectPath: null },
};

/** What an execution of the summary command outside the service is given: the model, the hooks, no tools. */
export const benchExecution = (runId: string, models: ModelClient, hooks: NodeHooks): Execution => ({
  runId,
  tenant: '',
  model: 'fake-model',
  models,
  nodeConfigs: Promise.resolve(new Map()),
  hooks,
  comparison: null,
  threadId: '',
  threadName: '',
  tools: noTools,
});

/** LangGraph alone: no queue in front of the model. */
export const noQueue = { acquire: async () => async () => undefined };
