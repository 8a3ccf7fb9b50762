import type { GateDecision } from '../contracts/runs';
import type { ToolReplay } from '../contracts/tools';
import type { ComparedRecord } from '../storage/types';

/** What the model of a comparison is told of a call it made that was not run. */
export const NOT_RUN_IN_COMPARISON =
  'Not run: this is a comparison, which acts on nothing. This tool asks a person first or may change something, and ' +
  'the run being compared made no such call. Answer without it.';

/** What a comparison writes instead of a publish step's call. */
export const NOT_PUBLISHED_IN_COMPARISON = 'a comparison never publishes';

/** A gate's decision in a comparison: the original's, and whether it was an edit there (not applied here). */
export interface ComparedDecision {
  decision: GateDecision;
  inOriginal: { run_id: string; edited: boolean };
}

/**
 * A comparison's view of the run it compares (docs/compare.md): the answers its tool calls recorded, by tool and
 * canonical arguments' hash, and its gates' decisions, by gate and visit. A comparison acts on nothing: each of its
 * calls gets the original's answer to the same call, runs only when read-only and allowed, and is otherwise not run;
 * each of its gates takes the decision the original took at the same visit.
 */
export class ComparedRun {
  private readonly answers = new Map<string, { text: string; is_error: boolean }>();
  private readonly decisions = new Map<string, ComparedRecord['decisions']>();

  constructor(
    readonly runId: string,
    record: ComparedRecord,
  ) {
    for (const call of record.calls) {
      const key = `${call.tool}\n${call.argumentsSha256}`;
      // The first answer the original got to a call: the one its model read first.
      if (!this.answers.has(key)) this.answers.set(key, { text: call.result.text, is_error: call.result.isError });
    }
    for (const event of record.decisions) {
      this.decisions.set(event.node, [...(this.decisions.get(event.node) ?? []), event]);
    }
  }

  /**
   * What to do with a call of `tool` with these arguments: the original's recorded answer, run it (a read-only tool
   * its policy lets run without asking), or not run it.
   */
  replayOf(
    tool: { name: string; readOnly: boolean },
    argumentsSha256: string,
    policy: 'allow' | 'ask',
  ): { replay: ToolReplay; answer?: { text: string; is_error: boolean } } {
    const answer = this.answers.get(`${tool.name}\n${argumentsSha256}`);
    if (answer) return { replay: 'recorded', answer };
    return { replay: tool.readOnly && policy === 'allow' ? 'ran' : 'not_run' };
  }

  /** The recorded answer to a call, for a call recorded as `recorded` (a leg that runs its node again). */
  answerTo(tool: string, argumentsSha256: string): { text: string; is_error: boolean } | undefined {
    return this.answers.get(`${tool}\n${argumentsSha256}`);
  }

  /**
   * The decision the original took at the `visit`-th stop at `gate`; undefined when it never decided there (it did
   * not reach the gate that often, or still waits): the comparison then stops for a person, as any run does.
   */
  decisionAt(gate: string, visit: number): ComparedDecision | undefined {
    const event = this.decisions.get(gate)?.[visit - 1];
    if (!event) return undefined;
    const inOriginal = { run_id: this.runId, edited: event.type === 'gate_edited' };
    switch (event.type) {
      case 'gate_approved':
      case 'gate_edited':
        // An edit changed the original's text; here the comparison's own text goes on, approved.
        return { decision: { kind: 'approve', reason: event.reason, deciders: event.deciders ?? [] }, inOriginal };
      case 'gate_rejected':
        return { decision: { kind: 'reject', reason: event.reason, deciders: event.deciders ?? [] }, inOriginal };
      case 'gate_responded':
        return {
          decision: {
            kind: 'respond',
            reason: event.reason,
            deciders: event.deciders ?? [],
            response: event.response,
            to: event.to,
          },
          inOriginal,
        };
      case 'gate_expired':
        return {
          decision: { kind: 'expire', reason: null, deciders: ['expiry'], outcome: event.outcome, to: event.to },
          inOriginal,
        };
    }
  }
}
