import type { NodeStatus } from '../contracts/runs';

/**
 * How a leg of a run ended in this process: the run's end (`completed`, `rejected`, `error`, `cancelled`), a pause at
 * a gate or a tool call that asks (`waiting_approval`), or a stop that leaves the run to go on elsewhere or later
 * (`interrupted`: a shutdown, the run taken over by another process, the database away for longer than a run waits).
 */
export type LegOutcome = 'completed' | 'rejected' | 'error' | 'cancelled' | 'waiting_approval' | 'interrupted';

/**
 * What the engine tells of its work as it happens, for the process's metrics (main.ts passes one in when metrics are
 * on). It is called on a run's path, once per leg and per phase, never per token: an implementation counts and
 * returns.
 */
export interface RunObserver {
  /** A leg ended here, `seconds` after it began in this process (its wait for a place included). */
  legEnded(agent: string, outcome: LegOutcome, seconds: number): void;
  /** A phase ended with `status`, `seconds` after it was entered (its model calls and tool calls included). */
  phaseEnded(agent: string, phase: string, status: NodeStatus, seconds: number): void;
}
