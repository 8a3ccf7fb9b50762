import { randomUUID } from 'node:crypto';
import type { Access } from '../auth/access';
import type { Principal } from '../auth/principal';
import type { Score } from '../contracts/datasets';
import { badRequest, conflict, notFound } from '../contracts/errors';
import type {
  Experiment,
  ExperimentComparison,
  ExperimentItem,
  ExperimentRequest,
  ExperimentSummary,
  ExperimentTotals,
} from '../contracts/experiments';
import type { DatasetsRepository } from '../db/datasets.repository';
import type { ExperimentItemRow, ExperimentRow, ExperimentsRepository } from '../db/experiments.repository';
import type { DatasetsService } from './datasets.service';
import type { RunsService } from './runs.service';
import type { UsageService } from './usage.service';

export interface ExperimentsServiceDeps {
  access: Pick<Access, 'requireProjectRole'>;
  usage: Pick<UsageService, 'seesSpend'>;
  datasets: Pick<DatasetsService, 'visibleDataset'>;
  datasetRows: Pick<DatasetsRepository, 'itemsToRun'>;
  experiments: ExperimentsRepository;
  runsService: Pick<RunsService, 'experimentPin' | 'checkItemFolder' | 'cancelRun'>;
  /** Throws when a model's provider is not configured on this server (models/cloud-providers.ts). */
  checkModel(model: string): void;
}

/** The median and the 95th percentile (nearest rank) of the figures there are. */
export function spread(values: readonly (number | null)[]): { median: number | null; p95: number | null } {
  const known = values.filter((v): v is number => v !== null).sort((a, b) => a - b);
  if (!known.length) return { median: null, p95: null };
  const middle = known.length / 2;
  const median = known.length % 2 ? known[Math.floor(middle)]! : (known[middle - 1]! + known[middle]!) / 2;
  return { median, p95: known[Math.ceil(0.95 * known.length) - 1]! };
}

const sum = (values: readonly (number | null)[]) =>
  values.some((v) => v !== null) ? values.reduce<number>((total, v) => total + (v ?? 0), 0) : null;

function totalsOf(items: readonly ExperimentItemRow[], showSpend: boolean): ExperimentTotals {
  const checks = new Map<string, { kind: Score['kind']; passed: number; scored: number }>();
  for (const score of items.flatMap((item) => item.scores)) {
    const total = checks.get(score.check) ?? { kind: score.kind, passed: 0, scored: 0 };
    total.scored++;
    if (score.pass) total.passed++;
    checks.set(score.check, total);
  }
  const scores = [...checks.values()];
  const given = scores.reduce((n, c) => n + c.scored, 0);
  const cost = sum(items.map((item) => (item.cost_usd === null ? null : Number(item.cost_usd))));
  return {
    checks: [...checks].map(([check, t]) => ({ check, ...t, pass_rate: t.scored ? t.passed / t.scored : null })),
    pass_rate: given ? scores.reduce((n, c) => n + c.passed, 0) / given : null,
    input_tokens: showSpend ? (sum(items.map((item) => item.input_tokens)) ?? 0) : null,
    output_tokens: showSpend ? (sum(items.map((item) => item.output_tokens)) ?? 0) : null,
    cost_usd: showSpend ? cost : null,
    first_token_ms: spread(items.map((item) => item.first_token_ms)),
    run_ms: spread(items.map((item) => item.run_ms)),
  };
}

function itemOf(row: ExperimentItemRow, showSpend: boolean): ExperimentItem {
  return {
    item_id: row.item_id,
    position: row.position,
    message: row.message,
    // A start claimed but not yet written is, to a reader, still to come.
    status: row.status === 'starting' ? 'pending' : row.status,
    run_id: row.status === 'pending' || row.status === 'starting' ? null : row.run_id,
    run_status: row.run_status,
    output: row.output,
    input_tokens: showSpend ? row.input_tokens : null,
    output_tokens: showSpend ? row.output_tokens : null,
    cost_usd: showSpend && row.cost_usd !== null ? Number(row.cost_usd) : null,
    first_token_ms: row.first_token_ms,
    run_ms: row.run_ms,
    scores: row.scores,
    error: row.error,
  };
}

/**
 * Experiments (docs/compare.md#datasets-and-experiments): a dataset run against an agent version and a model, each
 * item as a comparison run that acts on nothing, scored by checks. This is what the API reads and starts; the
 * experiment runner (experiment-runner.ts) drives them.
 */
export function experimentsService(deps: ExperimentsServiceDeps) {
  const { access, experiments } = deps;

  /** Spend is shown as a run's is (usage.service.ts seesSpend). */
  const showsSpend = (principal: Principal, experiment: ExperimentRow) =>
    deps.usage.seesSpend(principal, experiment.project_id, experiment.created_by);

  function summaryOf(row: ExperimentRow, items: readonly ExperimentItemRow[], showSpend: boolean): ExperimentSummary {
    return {
      id: row.id,
      dataset_id: row.dataset_id,
      project_id: row.project_id,
      name: row.name,
      agent: row.agent,
      agent_version: row.agent_version,
      model: row.model,
      checks: row.checks,
      status: row.status,
      progress: { done: items.filter((i) => i.status === 'done' || i.status === 'failed').length, total: items.length },
      created_by: row.created_by_name,
      created_at: row.created_at.toISOString(),
      finished_at: row.finished_at?.toISOString() ?? null,
      totals: totalsOf(items, showSpend),
    };
  }

  async function visibleExperiment(principal: Principal, id: string): Promise<ExperimentRow> {
    const experiment = await experiments.get(id);
    if (!experiment) throw notFound(`experiment ${id} not found`);
    await access.requireProjectRole(principal, experiment.project_id, 'viewer', `experiment ${id}`);
    return experiment;
  }

  async function read(principal: Principal, row: ExperimentRow): Promise<Experiment> {
    const [items, showSpend] = await Promise.all([
      experiments.items([row.id]).then((byId) => byId.get(row.id)!),
      showsSpend(principal, row),
    ]);
    return { ...summaryOf(row, items, showSpend), items: items.map((item) => itemOf(item, showSpend)) };
  }

  return {
    /**
     * Starts an experiment: every item of the dataset, copied as it is now, run on the agent's version and the
     * model, with the item's checks and these. Who starts it needs the member role, the rights over each item's
     * folder, and the models' providers configured.
     */
    async run(principal: Principal, datasetId: string, request: ExperimentRequest): Promise<ExperimentSummary> {
      const dataset = await deps.datasets.visibleDataset(principal, datasetId, 'member');
      const checks = request.checks ?? [];
      const items = await deps.datasetRows.itemsToRun(datasetId);
      if (!items.length) throw badRequest(`dataset ${datasetId} has no items: add some before running an experiment`);
      for (const model of new Set([
        request.model,
        ...[...checks, ...items.flatMap((i) => i.checks)].flatMap((c) => (c.kind === 'judge' ? [c.model] : [])),
      ])) {
        deps.checkModel(model);
      }
      const pin = await deps.runsService.experimentPin(dataset.project_id, request.agent, request.agent_version);
      for (const folder of new Set(items.map((i) => i.project_path))) {
        await deps.runsService.checkItemFolder(principal, dataset.project_id, folder);
      }
      const id = randomUUID();
      await experiments.create(
        {
          id,
          dataset_id: datasetId,
          name: request.name ?? null,
          agent: pin.agent,
          agent_version: pin.agentVersion,
          manifest_hash: pin.manifestHash,
          model: request.model,
          checks,
          created_by: principal.id,
          created_by_name: principal.name,
        },
        items,
      );
      const row = (await experiments.get(id))!;
      return summaryOf(row, (await experiments.items([id])).get(id)!, true);
    },

    async list(principal: Principal, datasetId: string): Promise<{ experiments: ExperimentSummary[] }> {
      await deps.datasets.visibleDataset(principal, datasetId, 'viewer');
      const rows = await experiments.ofDataset(datasetId);
      const items = await experiments.items(rows.map((r) => r.id));
      return {
        experiments: await Promise.all(
          rows.map(async (row) => summaryOf(row, items.get(row.id)!, await showsSpend(principal, row))),
        ),
      };
    },

    async get(principal: Principal, id: string): Promise<Experiment> {
      return read(principal, await visibleExperiment(principal, id));
    },

    /**
     * Cancels a running experiment (a member of its project): items not yet scored fail as cancelled, and their runs
     * still going are cancelled; what was scored stays. 409 once it has ended.
     */
    async cancel(principal: Principal, id: string): Promise<Experiment> {
      const experiment = await visibleExperiment(principal, id);
      await access.requireProjectRole(principal, experiment.project_id, 'member', `experiment ${id}`);
      const going = await experiments.cancel(id);
      if (!going)
        throw conflict(`experiment ${id} is ${experiment.status}: only a running experiment can be cancelled`);
      for (const runId of going) {
        // A run that ended meanwhile has nothing to cancel.
        await deps.runsService.cancelRun(principal, runId, 'its experiment was cancelled').catch(() => undefined);
      }
      return read(principal, (await experiments.get(id))!);
    },

    /** Two experiments on one dataset, item by item: each check's verdict in both, and what flipped. */
    async compare(principal: Principal, baseId: string, otherId: string): Promise<ExperimentComparison> {
      const [baseRow, otherRow] = await Promise.all([
        visibleExperiment(principal, baseId),
        visibleExperiment(principal, otherId),
      ]);
      if (baseRow.dataset_id !== otherRow.dataset_id) {
        throw badRequest(
          `experiments ${baseId} and ${otherId} ran different datasets: only experiments on one dataset compare`,
        );
      }
      const [base, other] = await Promise.all([read(principal, baseRow), read(principal, otherRow)]);
      const othersItems = new Map(other.items.map((item) => [item.item_id, item]));
      const flips = { pass_to_fail: 0, fail_to_pass: 0 };
      const items = base.items
        .filter((item) => othersItems.has(item.item_id))
        .map((item) => {
          const theirs = othersItems.get(item.item_id)!;
          const verdicts = (scores: Score[]) => new Map(scores.map((s) => [s.check, s.pass]));
          const mine = verdicts(item.scores);
          const their = verdicts(theirs.scores);
          const checks = [...new Set([...mine.keys(), ...their.keys()])].map((check) => {
            const was = mine.get(check) ?? null;
            const is = their.get(check) ?? null;
            const flip =
              was === true && is === false ? 'pass_to_fail' : was === false && is === true ? 'fail_to_pass' : null;
            if (flip) flips[flip]++;
            return { check, base: was, other: is, flip } as const;
          });
          return {
            item_id: item.item_id,
            position: item.position,
            message: item.message,
            checks,
            flipped: checks.some((c) => c.flip !== null),
          };
        });
      const { items: _b, ...baseSummary } = base;
      const { items: _o, ...otherSummary } = other;
      return { base: baseSummary, other: otherSummary, items, flips };
    },
  };
}

export type ExperimentsService = ReturnType<typeof experimentsService>;
