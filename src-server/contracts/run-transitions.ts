import type { RunStatus } from './runs';

/** One change of a run's status: the statuses it may find, the one it leaves, and what makes it. */
export interface RunTransition {
  /** null: the run's row is new. */
  from: readonly RunStatus[] | null;
  to: RunStatus;
  when: string;
}

/**
 * Every change of a run's status. Each statement that changes one is guarded by its transition's `from`, so that of
 * two processes that race, one wins and the other learns it lost. Those of db/runs.repository.ts name their
 * transition here (statusGuard); two are PL/pgSQL functions of db/migrations/, with the statuses written out
 * (test/server/migrations.int.test.ts reads them from the database and holds them to this table):
 * svc_start_agent_run() (and svc_start_run, the release before's) writes a new row (`start`, or `enqueue` behind a
 * busy thread; a new row has no `from`, the thread's lock keeps it to one active run) and svc_cancel_run() makes
 * `cancel`. docs/run-lifecycle.md#run-statuses shows the
 * same table, and a test compares the two.
 */
export const RUN_TRANSITIONS = {
  start: { from: null, to: 'running', when: 'a run request or a fork is accepted' },
  enqueue: { from: null, to: 'queued', when: 'a run request with `enqueue` finds its thread busy' },
  dequeue: { from: ['queued'], to: 'running', when: 'the runs ahead of it in its thread have ended' },
  pause: { from: ['running'], to: 'waiting_approval', when: 'the run reaches a gate' },
  resume: { from: ['waiting_approval'], to: 'running', when: 'the gate is decided, or expires' },
  complete: { from: ['running'], to: 'completed', when: 'the graph ends' },
  reject: { from: ['running'], to: 'rejected', when: 'a rejection at a gate ends the run' },
  fail: { from: ['running'], to: 'error', when: 'the run fails, times out, or its processes keep dying' },
  cancel: {
    from: ['queued', 'running', 'waiting_approval'],
    to: 'cancelled',
    when: 'a cancel, a later run that interrupts or rolls back, or its thread is deleted',
  },
  sweep: { from: ['running'], to: 'error', when: 'startup: running for over an hour with no lease' },
} as const satisfies Record<string, RunTransition>;

export type RunTransitionName = keyof typeof RUN_TRANSITIONS;

/** `status IN (…)` of a transition, for a repository's guard: the statuses are constants, never input. */
export function statusGuard(name: RunTransitionName, column = 'status'): string {
  const { from } = RUN_TRANSITIONS[name];
  if (!from) throw new Error(`transition ${name} creates a row: it has no guard`);
  return `${column} IN (${from.map((status) => `'${status}'`).join(', ')})`;
}
