import type { ForkedFrom, PendingResume, RunRecord } from '../storage/types';

/** What the engine knows of a thread's latest checkpoint when it plans a leg. */
export interface CheckpointSummary {
  id: string;
  /** The run whose step wrote it (the `run_id` channel of the state). */
  runId: string | null;
  /** The graph waits there at an interrupt (a gate). */
  interrupted: boolean;
}

/**
 * How an execution of a run begins, decided from the run's row and its thread's latest checkpoint alone: the same
 * for a first start, a fork, a gate's decision, an expiry and a takeover after a crash. A first start and a takeover
 * take the same path: the path that matters in an outage is the one every run takes.
 */
export type LegPlan =
  /** Nothing of this run is checkpointed yet: the graph starts from the run's request. */
  | { kind: 'start'; opening: Opening }
  /** A run on a branch with nothing checkpointed yet: its branch point is written, and the graph goes on from it. */
  | { kind: 'branch'; from: ForkedFrom; opening: Opening }
  /** The run waits at the interrupt its decision answers: the graph resumes with the decision. */
  | { kind: 'resume'; resume: PendingResume; opening: Opening }
  /** The graph goes on from its checkpoint (a takeover mid-leg, or one that finds the graph already ended). */
  | { kind: 'continue'; opening: Opening }
  /** The run cannot go on: it ends as an error with this reason. */
  | { kind: 'give_up'; reason: string; opening: Opening };

/** The event a leg opens with: a new run's run_start, a takeover's run_resumed, or none (a decision's leg). */
export type Opening = 'run_start' | 'run_resumed' | null;

export interface PlanLimits {
  /** Executions of one run (the first included) before it is given up. */
  maxAttempts: number;
  /** Whether the run's agent or command is loaded in this process. */
  agentLoaded: boolean;
}

export function planLeg(run: RunRecord, latest: CheckpointSummary | undefined, limits: PlanLimits): LegPlan {
  const takenOver = run.attempts > 1;
  if (!limits.agentLoaded) {
    return {
      kind: 'give_up',
      reason: `no agent or command named "${run.agent}" is loaded to run it`,
      opening: takenOver ? 'run_resumed' : null,
    };
  }
  // Takeovers after a clean stop (a shutdown handed the run over) are no failure of the run's.
  if (run.attempts - run.handovers > limits.maxAttempts) {
    return {
      kind: 'give_up',
      reason: `its server process stopped ${run.attempts - 1 - run.handovers} times while running it; given up`,
      opening: 'run_resumed',
    };
  }
  const ours = latest !== undefined && latest.runId === run.id;
  if (!ours) {
    const opening = takenOver ? 'run_resumed' : 'run_start';
    return run.forkedFrom ? { kind: 'branch', from: run.forkedFrom, opening } : { kind: 'start', opening };
  }
  const opening = takenOver ? 'run_resumed' : null;
  // A decision answers the interrupt it was taken at. A run that went on from there (and perhaps stopped again, at
  // the gate a respond sent it back to) goes on, and stops where it stops.
  const answered = run.resume && (run.resume.checkpointId === null || run.resume.checkpointId === latest.id);
  if (run.resume && latest.interrupted && answered) return { kind: 'resume', resume: run.resume, opening };
  return { kind: 'continue', opening };
}
