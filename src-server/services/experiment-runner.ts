import { atLeast, type Access } from '../auth/access';
import { BUILT_IN_PRINCIPALS, type Principal } from '../auth/principal';
import { errorMessage, ServiceError } from '../contracts/errors';
import type { ExperimentItemRow, ExperimentRow, ExperimentsRepository } from '../db/experiments.repository';
import type { ModelCallsRepository } from '../db/model-calls.repository';
import type { RunsRepository } from '../db/runs.repository';
import type { UsersRepository } from '../db/users.repository';
import { pricedCall } from '../engine';
import { getLogger } from '../log';
import type { ModelClient } from '../models/model-client';
import type { PriceTable } from '../models/model-prices';
import type { RunWriteStore } from '../storage/types';
import type { ComparisonsService } from './comparisons.service';
import { scoreChecks, type AskJudge } from './experiment-checks';
import { PollLoop } from './poll-loop';
import type { RunsService } from './runs.service';

const log = getLogger('svc.experiments');

/** Items of one experiment under way at once, over the whole cluster: a few, so one experiment never floods a queue. */
export const ITEMS_AT_ONCE = 3;
/** How long a claim to start or score an item holds before another process may take it over. */
const CLAIM_S = 120;
/** How long an item whose start was refused for now (the runtime's per-user limit, a database away) waits. */
const RETRY_START_S = 5;
/** How long a judge may take to answer. */
const JUDGE_TIMEOUT_MS = 120_000;
/** Running experiments one tick looks at. */
const EXPERIMENTS_PER_TICK = 50;

export interface ExperimentRunnerDeps {
  experiments: ExperimentsRepository;
  runs: Pick<RunsRepository, 'detail'>;
  runsService: Pick<RunsService, 'startExperimentRun' | 'cancelRun'>;
  comparisons: Pick<ComparisonsService, 'figures'>;
  calls: Pick<ModelCallsRepository, 'runTotals'>;
  access: Pick<Access, 'scopeRole'>;
  users: Pick<UsersRepository, 'get'>;
  /** Asks the judges, through the same providers and local-runtime queue as runs. */
  models: ModelClient;
  /** Where a judge's call is recorded, on the item's run: spending on judges counts as any run's. */
  records: RunWriteStore;
  prices: PriceTable;
}

/**
 * Drives experiments (docs/compare.md#datasets-and-experiments) on every process: each tick scores the items whose
 * runs ended and starts the next, a few at a time per experiment. The database holds every step (experiments
 * .repository.ts claims), so any process may stop at any point and another goes on from there.
 */
export function experimentDriver(deps: ExperimentRunnerDeps) {
  const { experiments } = deps;

  /** Who runs the experiment, as she is now: her runs start with her rights, or not at all. */
  async function principalOf(experiment: ExperimentRow): Promise<Principal | string> {
    const builtIn = BUILT_IN_PRINCIPALS.find((p) => p.id === experiment.created_by);
    const user = builtIn ? undefined : await deps.users.get(experiment.created_by);
    const principal: Principal | undefined =
      builtIn ??
      (user && {
        id: user.id,
        kind: 'session',
        name: user.name ?? user.email ?? user.id,
        email: user.email ?? undefined,
        instanceAdmin: false,
      });
    if (!principal) return `${experiment.created_by_name}, who started the experiment, was deleted`;
    if (!builtIn && !atLeast(await deps.access.scopeRole(principal, 'project', experiment.project_id), 'member')) {
      return `${experiment.created_by_name}, who started the experiment, may no longer run agents in this project`;
    }
    return principal;
  }

  const failed = (error: string) => ({
    status: 'failed' as const,
    runStatus: null,
    output: null,
    inputTokens: null,
    outputTokens: null,
    costUsd: null,
    firstTokenMs: null,
    runMs: null,
    scores: [],
    error,
  });

  async function start(experiment: ExperimentRow, item: ExperimentItemRow): Promise<void> {
    const runId = item.run_id!;
    // A start that happened before its process stopped is found by its run id, never made twice.
    if (await experiments.runExists(runId)) {
      await experiments.started(experiment.id, item.item_id);
      return;
    }
    const who = await principalOf(experiment);
    if (typeof who === 'string') return experiments.finish(experiment.id, item.item_id, failed(who));
    try {
      await deps.runsService.startExperimentRun(who, {
        runId,
        projectId: experiment.project_id,
        experimentId: experiment.id,
        pin: {
          agent: experiment.agent,
          agentVersion: experiment.agent_version,
          manifestHash: experiment.manifest_hash,
        },
        model: experiment.model,
        item: {
          id: item.item_id,
          message: item.message,
          projectPath: item.project_path,
          sourceRunId: item.source_run_id,
        },
      });
      if (!(await experiments.started(experiment.id, item.item_id))) {
        // Cancelled while its run was starting: the run stops too.
        await deps.runsService.cancelRun(who, runId, 'its experiment was cancelled').catch(() => undefined);
      }
    } catch (error) {
      // The runtime's per-user limit, a provider or database away: this item's turn comes again.
      // A spent budget is no wait of seconds: the item fails saying so.
      const waits = error instanceof ServiceError && error.status === 429 && error.code !== 'budget_exceeded';
      if (!(error instanceof ServiceError) || waits || error.status >= 500) {
        log.warn(`experiment ${experiment.id} item ${item.position}: its run waits to start: ${errorMessage(error)}`);
        return experiments.later(experiment.id, item.item_id, RETRY_START_S);
      }
      await experiments.finish(experiment.id, item.item_id, failed(`its run could not start: ${errorMessage(error)}`));
    }
  }

  async function score(experiment: ExperimentRow, item: ExperimentItemRow): Promise<void> {
    const run = item.run_id ? await deps.runs.detail(item.run_id) : undefined;
    if (!run)
      return experiments.finish(experiment.id, item.item_id, failed('its run was removed before it was scored'));
    const stopped = run.status === 'waiting_approval';
    if (stopped) {
      // An experiment never waits for a person: a gate the item's record holds no decision for ends its run there.
      const who = await principalOf(experiment);
      if (typeof who !== 'string') {
        await deps.runsService
          .cancelRun(who, run.id, 'an experiment stops at a gate its item recorded no decision for')
          .catch(() => undefined);
      }
    }
    const { phases, runMs, firstTokenMs } = await deps.comparisons.figures(run);
    const latest: Record<string, string> = {};
    for (const phase of phases) if (phase.output) latest[phase.node_id] = phase.output;
    const lastPhase = phases.findLast((p) => p.output);
    const output = run.output ?? lastPhase?.output ?? null;
    const askJudge: AskJudge = async (model, messages) => {
      const turn = await deps.models.stream({
        model,
        label: `experiment ${experiment.id} item ${item.position} judge`,
        tenant: experiment.project_id,
        messages,
        signal: AbortSignal.timeout(JUDGE_TIMEOUT_MS),
        onToken: () => undefined,
        onQueued: () => undefined,
        onTrimmed: () => undefined,
        onUsage: (usage) => {
          deps.records
            .write({ events: [], nodes: [], calls: [pricedCall(deps.prices, run.id, 'judge', usage)] })
            .catch((error) => log.error(`a judge's call of run ${run.id} was not recorded: ${errorMessage(error)}`));
        },
      });
      return turn.text;
    };
    const scores = await scoreChecks(
      [...item.checks, ...experiment.checks],
      { message: item.message, expected: item.expected, output, phases: latest },
      askJudge,
    );
    const totals = (await deps.calls.runTotals(run.id))?.total;
    const ended = run.status === 'error' || run.status === 'cancelled';
    await experiments.finish(experiment.id, item.item_id, {
      status: ended ? 'failed' : 'done',
      runStatus: stopped ? 'stopped' : run.status,
      output,
      inputTokens: totals?.input_tokens ?? null,
      outputTokens: totals?.output_tokens ?? null,
      costUsd: totals?.cost_usd ?? null,
      firstTokenMs,
      runMs,
      scores,
      error: run.status === 'error' ? (run.error_detail ?? 'the run failed') : null,
    });
  }

  return {
    /** One pass over the running experiments: what ended is scored, what may start starts, what is whole completes. */
    async drive(goOn: () => boolean = () => true): Promise<void> {
      for (const experiment of await experiments.running(EXPERIMENTS_PER_TICK)) {
        if (!goOn()) return;
        for (const item of await experiments.claimScorings(experiment.id, CLAIM_S)) {
          try {
            await score(experiment, item);
          } catch (error) {
            // Left claimed: once the claim lapses, a process scores it again.
            log.warn(`experiment ${experiment.id} item ${item.position} could not be scored: ${errorMessage(error)}`);
          }
        }
        if (!goOn()) return;
        const starts = await experiments.claimStarts(experiment.id, ITEMS_AT_ONCE, CLAIM_S);
        await Promise.all(starts.map((item) => start(experiment, item)));
        if (await experiments.completeIfDone(experiment.id)) log.info(`experiment ${experiment.id} completed`);
      }
    },
  };
}

export type ExperimentDriver = ReturnType<typeof experimentDriver>;

/** Each process's clock for experiments: every `pollS` seconds it drives them a step (experimentDriver). */
export class ExperimentRunner extends PollLoop {
  constructor(driver: ExperimentDriver, pollS: number) {
    super(
      (goOn) => driver.drive(goOn).catch((error) => log.warn(`driving experiments failed: ${errorMessage(error)}`)),
      pollS,
    );
  }
}
