import type { Access } from '../auth/access';
import type { Principal } from '../auth/principal';
import type { ComparedRun, Comparison } from '../contracts/comparisons';
import { notFound } from '../contracts/errors';
import type { RunNode } from '../contracts/runs';
import type { ComparedRunsRepository } from '../db/compared-runs.repository';
import type { RunsRepository, StoredRun } from '../db/runs.repository';
import type { AgentDirectory } from './agent-directory';
import type { UsageService } from './usage.service';

export interface ComparisonsServiceDeps {
  access: Pick<Access, 'requireProjectRole'>;
  runs: Pick<RunsRepository, 'detail' | 'nodes'>;
  compared: Pick<ComparedRunsRepository, 'toolCallsOf' | 'decisionsOf'>;
  usage: Pick<UsageService, 'forRun'>;
  /** The graph a run ran, to tell its gates (time waiting there is a person's, not the run's) from its phases. */
  agents: Pick<AgentDirectory, 'pinnedEntry'>;
}

const ms = (seconds: number) => Math.round(seconds * 1000);

/** Comparisons as people read them (docs/compare.md): a comparison beside the run it compares. */
export function comparisonsService(deps: ComparisonsServiceDeps) {
  const { access, runs } = deps;

  /**
   * A run's phases (its gates left out: time waiting there is a person's, not the run's), with its run time and time
   * to first token: what a comparison and an experiment show of it.
   */
  async function figures(run: StoredRun): Promise<{ phases: RunNode[]; runMs: number; firstTokenMs: number | null }> {
    const [nodes, entry] = await Promise.all([
      runs.nodes(run.id),
      run.manifest_hash ? deps.agents.pinnedEntry(run.manifest_hash) : undefined,
    ]);
    const gates = new Set(entry?.layout.nodes.filter((n) => n.kind === 'gate').map((n) => n.id));
    const phases = nodes.filter((n) => !gates.has(n.node_id));
    const firstToken = Math.min(...phases.map((n) => n.first_token_at ?? Infinity));
    const began = Math.min(...phases.map((n) => n.entered_at));
    return {
      phases,
      runMs: phases.reduce((sum, n) => sum + (n.exited_at === null ? 0 : ms(n.exited_at - n.entered_at)), 0),
      firstTokenMs: Number.isFinite(firstToken) ? ms(firstToken - began) : null,
    };
  }

  async function side(principal: Principal, run: StoredRun): Promise<ComparedRun> {
    const [{ phases, runMs, firstTokenMs }, toolCalls, decisions, usage] = await Promise.all([
      figures(run),
      deps.compared.toolCallsOf(run.id),
      deps.compared.decisionsOf(run.id),
      deps.usage.forRun(principal, run),
    ]);
    return {
      run_id: run.id,
      thread_id: run.thread_id,
      agent: run.agent,
      agent_version: run.agent_version,
      model: run.model,
      status: run.status,
      output: run.output,
      run_ms: runMs,
      first_token_ms: firstTokenMs,
      usage,
      phases: phases.map((n: RunNode) => ({
        node: n.node_id,
        status: n.status,
        output: n.output,
        duration_ms: n.exited_at === null ? null : ms(n.exited_at - n.entered_at),
        first_token_ms: n.first_token_at === null ? null : ms(n.first_token_at - n.entered_at),
        output_tokens: n.output_tokens,
      })),
      tool_calls: toolCalls,
      decisions,
    };
  }

  return {
    figures,

    /** A comparison and the run it compares, side by side; 404 for a run that is not a comparison. */
    async comparison(principal: Principal, runId: string): Promise<Comparison> {
      const run = await runs.detail(runId);
      if (!run) throw notFound(`run ${runId} not found`);
      await access.requireProjectRole(principal, run.project_id, 'viewer', `run ${runId}`);
      if (!run.comparison_of) {
        throw notFound(`run ${runId} is not a comparison: POST /runs/${runId}/compare starts one of it`);
      }
      const original = await runs.detail(run.comparison_of);
      if (!original) throw notFound(`run ${run.comparison_of}, which run ${runId} compares, no longer exists`);
      const [before, after] = await Promise.all([side(principal, original), side(principal, run)]);
      return { original: before, comparison: after };
    },
  };
}

export type ComparisonsService = ReturnType<typeof comparisonsService>;
