import { randomUUID } from 'node:crypto';
import type { Access } from '../auth/access';
import type { Principal } from '../auth/principal';
import { badRequest, conflict, notFound } from '../contracts/errors';
import {
  checkName,
  type Dataset,
  type DatasetDetail,
  type DatasetItem,
  type DatasetItemPatch,
  type NewDataset,
  type NewDatasetItem,
} from '../contracts/datasets';
import type { ComparedRunsRepository } from '../db/compared-runs.repository';
import type { DatasetsRepository } from '../db/datasets.repository';
import type { RunsRepository } from '../db/runs.repository';
import type { AuditLog } from '../auth/audit-log';

export interface DatasetsServiceDeps {
  access: Pick<Access, 'requireProjectRole'>;
  datasets: DatasetsRepository;
  runs: Pick<RunsRepository, 'detail'>;
  compared: Pick<ComparedRunsRepository, 'recordOf'>;
  audit: AuditLog;
}

/** How much of an item's input and expected output the audit log keeps. */
const EXCERPT = 200;
const excerpt = (text: string | null) => (text !== null && text.length > EXCERPT ? `${text.slice(0, EXCERPT)}…` : text);
const keptDataset = (d: Dataset) => ({ name: d.name, description: d.description });
/** What the audit log keeps of an item: its place, the start of its input and expected output, its checks' names. */
const keptItem = (i: DatasetItem) => ({
  position: i.position,
  message: excerpt(i.message),
  expected: excerpt(i.expected),
  checks: i.checks.map(checkName),
  source_run_id: i.source_run_id,
});

/**
 * A project's datasets (docs/compare.md#datasets-and-experiments): a viewer reads them, a member changes them, and
 * another tenant's answer 404. An item made from a run copies it (input, folder, final output, the record a
 * comparison answers from), so the item outlives the run.
 */
export function datasetsService(deps: DatasetsServiceDeps) {
  const { access, datasets, audit } = deps;
  const itemTarget = (d: Dataset, itemId: string) => `item ${itemId} of dataset ${d.id} (${d.name})`;

  /** A dataset the caller holds `role` on in its project; 404 when it does not exist or she cannot see it. */
  async function visibleDataset(principal: Principal, id: string, role: 'viewer' | 'member'): Promise<Dataset> {
    const dataset = await datasets.get(id);
    if (!dataset) throw notFound(`dataset ${id} not found`);
    await access.requireProjectRole(principal, dataset.project_id, role, `dataset ${id}`);
    return dataset;
  }

  return {
    visibleDataset,

    async create(principal: Principal, projectId: string, body: NewDataset): Promise<Dataset> {
      await access.requireProjectRole(principal, projectId, 'member');
      const dataset = await datasets.create({
        id: randomUUID(),
        projectId,
        name: body.name,
        description: body.description || null,
        createdBy: principal.id,
        createdByName: principal.name,
      });
      await audit.record(principal, {
        action: 'dataset.created',
        projectId,
        target: `dataset ${dataset.id} (${dataset.name})`,
        before: null,
        after: keptDataset(dataset),
      });
      return dataset;
    },

    async list(principal: Principal, projectId: string): Promise<{ datasets: Dataset[] }> {
      await access.requireProjectRole(principal, projectId, 'viewer');
      return { datasets: await datasets.ofProject(projectId) };
    },

    async get(principal: Principal, id: string): Promise<DatasetDetail> {
      const dataset = await visibleDataset(principal, id, 'viewer');
      return { ...dataset, items: await datasets.items(id) };
    },

    async remove(principal: Principal, id: string): Promise<void> {
      const dataset = await visibleDataset(principal, id, 'member');
      await datasets.remove(id);
      await audit.record(principal, {
        action: 'dataset.deleted',
        projectId: dataset.project_id,
        target: `dataset ${id} (${dataset.name})`,
        before: { ...keptDataset(dataset), item_count: dataset.item_count },
        after: null,
      });
    },

    async addItem(principal: Principal, datasetId: string, body: NewDatasetItem): Promise<DatasetItem> {
      const dataset = await visibleDataset(principal, datasetId, 'member');
      const checks = body.checks ?? [];
      let item;
      if (body.run_id) {
        if (body.message !== undefined || body.project_path !== undefined) {
          throw badRequest(
            'invalid request body: give run_id, or message (with project_path): an item made from a run takes its input',
          );
        }
        const run = await deps.runs.detail(body.run_id);
        if (!run || run.project_id !== dataset.project_id) {
          throw badRequest(`invalid request body: run_id: no run ${body.run_id} in this dataset's project`, {
            fields: [{ field: 'run_id', message: "no such run in the dataset's project" }],
          });
        }
        if (run.status === 'running' || run.status === 'queued') {
          throw conflict(`run ${run.id} is ${run.status}: add it once it has ended or stops for a person`);
        }
        item = {
          message: run.message ?? '',
          projectPath: run.project_path,
          expected: body.expected ?? run.output,
          checks,
          sourceRunId: run.id,
          record: await deps.compared.recordOf(run.id),
        };
      } else if (body.message !== undefined) {
        item = {
          message: body.message,
          projectPath: body.project_path ?? null,
          expected: body.expected ?? null,
          checks,
          sourceRunId: null,
          // Typed by hand: nothing recorded, so an experiment runs none of its calls that could act.
          record: { calls: [], decisions: [] },
        };
      } else {
        throw badRequest('invalid request body: give run_id (a run to copy) or message (an item typed by hand)', {
          fields: [{ field: 'message', message: 'required without run_id' }],
        });
      }
      const added = await datasets.addItem(datasetId, randomUUID(), item);
      if (!added) throw notFound(`dataset ${datasetId} not found`);
      await audit.record(principal, {
        action: 'dataset_item.added',
        projectId: dataset.project_id,
        target: itemTarget(dataset, added.id),
        before: null,
        after: keptItem(added),
      });
      return added;
    },

    async updateItem(
      principal: Principal,
      datasetId: string,
      itemId: string,
      change: DatasetItemPatch,
    ): Promise<DatasetItem> {
      const dataset = await visibleDataset(principal, datasetId, 'member');
      const before = await datasets.item(datasetId, itemId);
      const updated = await datasets.updateItem(datasetId, itemId, change);
      if (!updated) throw notFound(`item ${itemId} not found in dataset ${datasetId}`);
      await audit.record(principal, {
        action: 'dataset_item.changed',
        projectId: dataset.project_id,
        target: itemTarget(dataset, itemId),
        before: before ? keptItem(before) : null,
        after: keptItem(updated),
      });
      return updated;
    },

    async removeItem(principal: Principal, datasetId: string, itemId: string): Promise<void> {
      const dataset = await visibleDataset(principal, datasetId, 'member');
      const before = await datasets.item(datasetId, itemId);
      if (!(await datasets.removeItem(datasetId, itemId))) {
        throw notFound(`item ${itemId} not found in dataset ${datasetId}`);
      }
      await audit.record(principal, {
        action: 'dataset_item.deleted',
        projectId: dataset.project_id,
        target: itemTarget(dataset, itemId),
        before: before ? keptItem(before) : null,
        after: null,
      });
    },
  };
}

export type DatasetsService = ReturnType<typeof datasetsService>;
