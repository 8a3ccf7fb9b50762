import { z } from 'zod';
import { UuidSchema } from '../contracts/common';
import {
  DatasetDetailSchema,
  DatasetItemPatchSchema,
  DatasetItemSchema,
  DatasetListSchema,
  DatasetSchema,
  NewDatasetItemSchema,
  NewDatasetSchema,
} from '../contracts/datasets';
import {
  ExperimentComparisonSchema,
  ExperimentListSchema,
  ExperimentRequestSchema,
  ExperimentSchema,
  ExperimentSummarySchema,
} from '../contracts/experiments';
import type { Api } from './api';
import type { AppDeps } from './deps';

const IdParams = z.object({ id: UuidSchema });
const ItemParams = z.object({ id: UuidSchema, item_id: UuidSchema });
const MEMBER = "needs the member role on the dataset's project (forbidden)";

/**
 * Datasets, their items and their experiments (docs/compare.md#datasets-and-experiments): a viewer reads, a member
 * changes and runs, another tenant's answer 404.
 */
export function datasetRoutes(api: Api, { datasets, experiments }: AppDeps): void {
  const tag = 'datasets';

  api.route({
    method: 'get',
    path: '/projects/{id}/datasets',
    operationId: 'listDatasets',
    tag,
    summary: "A project's datasets, newest first",
    params: IdParams,
    responses: { 200: { description: 'the datasets', schema: DatasetListSchema } },
    handler: ({ params, ctx }) => datasets.list(ctx.principal, params.id),
  });

  api.route({
    method: 'post',
    path: '/projects/{id}/datasets',
    operationId: 'createDataset',
    tag,
    summary: 'Make a dataset in the project',
    params: IdParams,
    body: NewDatasetSchema,
    errors: { 403: 'needs the member role on the project (forbidden)' },
    responses: { 201: { description: 'made; its `id` names it from now on', schema: DatasetSchema } },
    handler: ({ params, body, ctx }) => datasets.create(ctx.principal, params.id, body),
  });

  api.route({
    method: 'get',
    path: '/datasets/{id}',
    operationId: 'getDataset',
    tag,
    summary: 'A dataset with its items, in order',
    params: IdParams,
    responses: { 200: { description: 'the dataset', schema: DatasetDetailSchema } },
    handler: ({ params, ctx }) => datasets.get(ctx.principal, params.id),
  });

  api.route({
    method: 'delete',
    path: '/datasets/{id}',
    operationId: 'deleteDataset',
    tag,
    summary: 'Delete a dataset, its items and its experiments (the runs they made stay, until retention removes them)',
    params: IdParams,
    errors: { 403: MEMBER },
    responses: { 204: { description: 'deleted' } },
    handler: async ({ params, ctx }) => {
      await datasets.remove(ctx.principal, params.id);
    },
  });

  api.route({
    method: 'post',
    path: '/datasets/{id}/items',
    operationId: 'addDatasetItem',
    tag,
    summary:
      "Add an item: a run's copy (its input, folder, record, and final output as the expected one), or one typed by hand",
    description:
      'An item is a copy, kept until it is deleted: retention never removes it, and it outlives the run it was made ' +
      "from. An experiment gives its calls the run's recorded answers; an item typed by hand has no record, so its " +
      'calls that could act are not run.',
    params: IdParams,
    body: NewDatasetItemSchema,
    errors: {
      400: "invalid request: neither run_id nor message, both, or a run not in the dataset's project (invalid_request)",
      403: MEMBER,
      409: 'the run is still running or queued (conflict)',
    },
    responses: { 201: { description: 'added at the end of the dataset', schema: DatasetItemSchema } },
    handler: ({ params, body, ctx }) => datasets.addItem(ctx.principal, params.id, body),
  });

  api.route({
    method: 'patch',
    path: '/datasets/{id}/items/{item_id}',
    operationId: 'updateDatasetItem',
    tag,
    summary: "Change an item's input, expected output or checks (only the fields given; `expected: null` clears it)",
    params: ItemParams,
    body: DatasetItemPatchSchema,
    errors: { 403: MEMBER },
    responses: { 200: { description: 'the item as changed', schema: DatasetItemSchema } },
    handler: ({ params, body, ctx }) => datasets.updateItem(ctx.principal, params.id, params.item_id, body),
  });

  api.route({
    method: 'delete',
    path: '/datasets/{id}/items/{item_id}',
    operationId: 'deleteDatasetItem',
    tag,
    summary: 'Delete an item (experiments that ran it keep their copy)',
    params: ItemParams,
    errors: { 403: MEMBER },
    responses: { 204: { description: 'deleted' } },
    handler: async ({ params, ctx }) => {
      await datasets.removeItem(ctx.principal, params.id, params.item_id);
    },
  });

  api.route({
    method: 'post',
    path: '/datasets/{id}/experiments',
    operationId: 'runExperiment',
    tag,
    summary:
      "Run the dataset's items on an agent version and a model, a few at a time, each as a comparison run that acts on nothing, and score them",
    description:
      'Each item runs in a thread of its own (left out of the default thread list) with what its run recorded: a ' +
      "recorded call gets its answer, another runs only when read-only and asking nobody; a gate takes the item's " +
      'recorded decision, and where it has none the item is scored at that stop and its run cancelled there. The ' +
      "item's checks and these score each output. Follow it at GET /experiments/{id} until `status` is `completed`.",
    params: IdParams,
    body: ExperimentRequestSchema,
    errors: {
      400:
        'invalid request: no such agent or version, a model whose provider is not configured, an empty dataset, or ' +
        'an item folder the caller may not use (invalid_request)',
      403: MEMBER,
    },
    responses: { 202: { description: 'started; it goes on in the background', schema: ExperimentSummarySchema } },
    handler: ({ params, body, ctx }) => experiments.run(ctx.principal, params.id, body),
  });

  api.route({
    method: 'get',
    path: '/datasets/{id}/experiments',
    operationId: 'listExperiments',
    tag,
    summary: "A dataset's experiments, newest first, with their totals",
    params: IdParams,
    responses: { 200: { description: 'the experiments', schema: ExperimentListSchema } },
    handler: ({ params, ctx }) => experiments.list(ctx.principal, params.id),
  });

  api.route({
    method: 'get',
    path: '/experiments/{id}',
    operationId: 'getExperiment',
    tag,
    summary:
      'An experiment: its status (`running`, then `completed`), its totals, and per item its run, output, tokens, cost, timings and scores',
    params: IdParams,
    responses: { 200: { description: 'the experiment', schema: ExperimentSchema } },
    handler: ({ params, ctx }) => experiments.get(ctx.principal, params.id),
  });

  api.route({
    method: 'post',
    path: '/experiments/{id}/cancel',
    operationId: 'cancelExperiment',
    tag,
    summary:
      'Cancel a running experiment: its items not yet scored fail as cancelled and their runs stop; the scored stay',
    params: IdParams,
    errors: { 403: MEMBER, 409: 'the experiment has completed or was cancelled (conflict)' },
    responses: { 200: { description: 'the experiment, cancelled', schema: ExperimentSchema } },
    handler: ({ params, ctx }) => experiments.cancel(ctx.principal, params.id),
  });

  api.route({
    method: 'get',
    path: '/experiments/{id}/comparison/{other_id}',
    operationId: 'compareExperiments',
    tag,
    summary:
      'Two experiments on one dataset, item by item: each check in both, and what went from pass to fail and back',
    params: z.object({ id: UuidSchema, other_id: UuidSchema }),
    errors: { 400: 'the two experiments ran different datasets (invalid_request)' },
    responses: {
      200: { description: 'the comparison, the first experiment as the base', schema: ExperimentComparisonSchema },
    },
    handler: ({ params, ctx }) => experiments.compare(ctx.principal, params.id, params.other_id),
  });
}
