/**
 * The run engine's one face: services import this module and nothing else of engine/ (.dependency-cruiser.cjs holds
 * them to it). It admits work (a new run, a fork, a decision) and executes run rows; leases, event ids, the graph
 * and the event log stay inside.
 */
export { Engine } from './engine';
export type { DecisionOutcome, DecisionRequest, EngineDeps, RunStart } from './engine';
export { roundOf, type PersonDecision } from './gates';
export type { LoggedEvent } from './events/logged-event';
export type { LegOutcome, RunObserver } from './run-observer';
export { phaseBeforeGate } from './graph/graph-builder';
// An experiment's judges' calls are counted as its runs' are (services/experiment-runner.ts).
export { pricedCall } from './model-call-log';
export type { BudgetGuard, BudgetVerdict } from './budget-guard';
// The graph as LangGraph runs it, for the benchmark's in-process baseline (test/bench/run.ts).
export { compileGraph, executionConfig, initialState, type Execution, type NodeHooks } from './graph/graph-builder';
