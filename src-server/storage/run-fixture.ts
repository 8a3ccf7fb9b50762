import { randomUUID } from 'node:crypto';
import { DEFAULT_PROJECT_ID } from '../contracts/tenancy';
import type { NewRun, NodeWrite } from './types';

/**
 * A run to start in a store or an engine under test: a new thread in the default project, on the local runtime. The
 * storage contract, the engine's test harness and the storage tests start their runs with it.
 */
export const newRun = (extra: Partial<NewRun> = {}): NewRun => ({
  id: randomUUID(),
  threadId: randomUUID(),
  newThread: { projectId: DEFAULT_PROJECT_ID },
  agent: 'review',
  model: 'fake-model',
  message: 'review this',
  projectPath: null,
  createdBy: randomUUID(),
  forkedFrom: null,
  localRuntime: true,
  localCap: null,
  strategy: 'reject',
  traceContext: null,
  agentVersion: '1',
  manifestHash: 'review-manifest',
  draft: false,
  comparisonOf: null,
  experimentItem: null,
  ...extra,
});

/** A node row as a leg writes it when the run enters the node (`status` running), entered now. */
export const nodeWrite = (
  runId: string,
  key: string,
  node: string,
  status: NodeWrite['status'] = 'running',
): NodeWrite => ({
  runId,
  key,
  node,
  status,
  output: '',
  enteredAt: performance.now(),
  exitedAt: null,
  firstTokenAt: null,
  queueWaitMs: null,
  promptTokens: null,
  outputTokens: null,
  warnings: [],
  thinking: null,
});
