import { describe, expect, it } from 'vitest';
import { planLeg, type CheckpointSummary } from './plan';
import type { RunRecord } from '../storage/types';

const run = (extra: Partial<RunRecord> = {}): RunRecord => ({
  id: 'run-1',
  threadId: 'thread-1',
  projectId: 'project-1',
  agent: 'review',
  model: 'm',
  message: 'review this',
  projectPath: null,
  status: 'running',
  attempts: 1,
  handovers: 0,
  seqReserved: 10_000,
  eventSeq: 0,
  forkedFrom: null,
  resume: null,
  endReason: null,
  traceContext: null,
  agentVersion: null,
  manifestHash: null,
  threadName: null,
  comparisonOf: null,
  experimentItem: null,
  ...extra,
});

const checkpoint = (extra: Partial<CheckpointSummary> = {}): CheckpointSummary => ({
  id: 'cp-2',
  runId: 'run-1',
  interrupted: false,
  ...extra,
});

const limits = { maxAttempts: 3, agentLoaded: true };
const approve = { kind: 'approve' as const, reason: null, deciders: ['Ann'] };

describe('how a leg of a run begins', () => {
  it('a new run starts from its request and opens its stream with run_start', () => {
    expect(planLeg(run(), undefined, limits)).toEqual({ kind: 'start', opening: 'run_start' });
    // The thread's latest checkpoint is an earlier run's: this run has none yet.
    expect(planLeg(run(), checkpoint({ runId: 'run-0' }), limits)).toEqual({ kind: 'start', opening: 'run_start' });
  });

  it('a fork writes its branch point from the checkpoint it names', () => {
    const from = { checkpoint_id: 'cp-1', run_id: 'run-0', outputs: { analysis: 'edited' } };
    expect(planLeg(run({ forkedFrom: from }), checkpoint({ runId: 'run-0' }), limits)).toEqual({
      kind: 'branch',
      from,
      opening: 'run_start',
    });
  });

  it("a decision resumes the interrupt it was taken at, and the gate's event opens the leg", () => {
    const resume = { decision: approve, checkpointId: 'cp-2' };
    expect(planLeg(run({ resume }), checkpoint({ interrupted: true }), limits)).toEqual({
      kind: 'resume',
      resume,
      opening: null,
    });
  });

  it('a decision does not answer a later interrupt: the run that went on and stopped again goes on to stop there', () => {
    const resume = { decision: approve, checkpointId: 'cp-1' };
    expect(planLeg(run({ resume }), checkpoint({ id: 'cp-5', interrupted: true }), limits)).toEqual({
      kind: 'continue',
      opening: null,
    });
  });

  it('an expiry resumes as a decision does', () => {
    const resume = {
      decision: { kind: 'expire' as const, outcome: 'reject' as const, reason: null, deciders: ['expiry'] },
      checkpointId: 'cp-2',
    };
    expect(planLeg(run({ resume }), checkpoint({ interrupted: true }), limits).kind).toBe('resume');
  });

  it('a takeover continues from the last checkpoint of the run, and says so with run_resumed', () => {
    expect(planLeg(run({ attempts: 2 }), checkpoint(), limits)).toEqual({ kind: 'continue', opening: 'run_resumed' });
  });

  it('a takeover of a run that died before its first checkpoint starts it again from its request', () => {
    expect(planLeg(run({ attempts: 2 }), checkpoint({ runId: 'run-0' }), limits)).toEqual({
      kind: 'start',
      opening: 'run_resumed',
    });
  });

  it('a takeover of a fork that died before its branch point writes it then', () => {
    const from = { checkpoint_id: 'cp-1', run_id: 'run-0', outputs: {} };
    expect(planLeg(run({ attempts: 2, forkedFrom: from }), undefined, limits)).toMatchObject({
      kind: 'branch',
      opening: 'run_resumed',
    });
  });

  it('a takeover that died right after a decision resumes the same decision', () => {
    const resume = { decision: approve, checkpointId: 'cp-2' };
    expect(planLeg(run({ attempts: 2, resume }), checkpoint({ interrupted: true }), limits)).toEqual({
      kind: 'resume',
      resume,
      opening: 'run_resumed',
    });
  });

  it('gives up a run whose processes kept dying, or whose agent is not loaded', () => {
    expect(planLeg(run({ attempts: 4 }), checkpoint(), limits)).toEqual({
      kind: 'give_up',
      reason: 'its server process stopped 3 times while running it; given up',
      opening: 'run_resumed',
    });
    // Takeovers after clean stops (handovers) count for no failure: three handed over, then two deaths, goes on.
    expect(planLeg(run({ attempts: 6, handovers: 3 }), checkpoint(), limits)).toEqual({
      kind: 'continue',
      opening: 'run_resumed',
    });
    expect(planLeg(run({ attempts: 7, handovers: 3 }), checkpoint(), limits)).toMatchObject({
      kind: 'give_up',
      reason: 'its server process stopped 3 times while running it; given up',
    });
    expect(planLeg(run(), undefined, { ...limits, agentLoaded: false })).toEqual({
      kind: 'give_up',
      reason: 'no agent or command named "review" is loaded to run it',
      opening: null,
    });
  });
});
