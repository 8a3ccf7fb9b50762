import type { Dataset, DatasetDetail, DatasetItem, DatasetItemPatch, NewDatasetItem } from '@contracts/datasets';
import { errorMessage } from '@contracts/errors';
import type { Experiment, ExperimentComparison, ExperimentRequest, ExperimentSummary } from '@contracts/experiments';
import { defineStore } from 'pinia';
import { computed, ref, watch } from 'vue';
import { datasetsApi } from '../api/datasets.api';
import { ApiError } from '../api/http';
import { experimentsApi } from '../api/experiments.api';
import { runsApi } from '../api/runs.api';
import { useCatalogStore } from './catalog.store';
import { useRunsStore } from './runs.store';
import { useSessionStore } from './session.store';

/** The view stays open across a reload of the page, on the dataset it showed, as the Schedules view does. */
const OPEN_KEY = 'svc.datasets-view-open';
const DATASET_KEY = 'svc.datasets-view-dataset';
/** How often a running experiment (and the list, while one runs) is read again. */
const POLL_MS = 1000;

/**
 * The Datasets view: a project's datasets; a dataset's items (inputs with their expected outputs and checks), added
 * from a run or typed, changed and deleted; its experiments (every item run with one agent and model, the outputs
 * scored), started, followed every second while they run, read item by item, and two of them compared.
 */
export const useDatasetsStore = defineStore('datasets', () => {
  const session = useSessionStore();
  const open = ref(sessionStorage.getItem(OPEN_KEY) === 'true');
  const projectId = ref<string | null>(null);
  const datasets = ref<Dataset[]>([]);
  const loaded = ref(false);
  const error = ref<string | null>(null);
  /** What the last action did, said above the view (role="status"). */
  const notice = ref<{ ok: boolean; text: string } | null>(null);

  /** The dataset shown, with its items. */
  const datasetId = ref<string | null>(sessionStorage.getItem(DATASET_KEY));
  const detail = ref<DatasetDetail | null>(null);
  const detailError = ref<string | null>(null);

  const experiments = ref<ExperimentSummary[]>([]);
  const experimentsError = ref<string | null>(null);
  /** The experiment whose results are shown, read again every second while it runs. */
  const experimentId = ref<string | null>(null);
  const experiment = ref<Experiment | null>(null);
  const experimentError = ref<string | null>(null);
  /** The comparison shown: base and other, and what it answered. */
  const comparison = ref<ExperimentComparison | null>(null);
  const comparisonError = ref<string | null>(null);
  let timer: ReturnType<typeof setTimeout> | undefined;

  const anyRunning = computed(
    () => experiment.value?.status === 'running' || experiments.value.some((e) => e.status === 'running'),
  );

  /** The header's project when one is chosen; otherwise the view keeps its own, the first it may see. */
  function settleProject(): void {
    const choices = session.projectChoices;
    if (session.scope.projectId) projectId.value = session.scope.projectId;
    else if (!projectId.value || !choices.some((c) => c.id === projectId.value)) {
      projectId.value = choices[0]?.id ?? null;
    }
  }

  async function load(): Promise<void> {
    settleProject();
    if (!projectId.value) {
      datasets.value = [];
      loaded.value = true;
      return;
    }
    try {
      datasets.value = (await datasetsApi.list(projectId.value)).datasets;
      error.value = null;
    } catch (e) {
      error.value = `The datasets could not be loaded: ${errorMessage(e)}`;
    }
    loaded.value = true;
    if (datasetId.value) await loadDataset();
  }

  async function loadDataset(): Promise<void> {
    const shown = datasetId.value;
    if (!shown) return;
    try {
      const [answer, list] = await Promise.all([datasetsApi.get(shown), experimentsApi.list(shown)]);
      if (shown !== datasetId.value) return;
      detail.value = answer;
      experiments.value = list.experiments;
      detailError.value = null;
      experimentsError.value = null;
      schedule();
    } catch (e) {
      if (shown !== datasetId.value) return;
      // Gone (deleted elsewhere, or another project's that this person no longer sees): the list instead.
      if (e instanceof ApiError && e.status === 404) openDataset(null);
      else detailError.value = `The dataset could not be loaded: ${errorMessage(e)}`;
    }
  }

  /** While an experiment runs, the one shown and the list are read again every second. */
  function schedule(): void {
    clearTimeout(timer);
    if (open.value && anyRunning.value) timer = setTimeout(() => void poll(), POLL_MS);
  }

  async function poll(): Promise<void> {
    const shown = datasetId.value;
    if (!shown || !open.value) return;
    try {
      const list = await experimentsApi.list(shown);
      if (shown !== datasetId.value) return;
      experiments.value = list.experiments;
      experimentsError.value = null;
      if (experimentId.value && (!experiment.value || experiment.value.status === 'running')) await readExperiment();
    } catch (e) {
      experimentsError.value = `The experiments could not be loaded: ${errorMessage(e)}`;
    }
    schedule();
  }

  async function readExperiment(): Promise<void> {
    const shown = experimentId.value;
    if (!shown) return;
    try {
      const answer = await experimentsApi.get(shown);
      if (shown !== experimentId.value) return;
      experiment.value = answer;
      experimentError.value = null;
    } catch (e) {
      if (shown === experimentId.value)
        experimentError.value = `The experiment could not be loaded: ${errorMessage(e)}`;
    }
  }

  function show(visible = true): void {
    open.value = visible;
    sessionStorage.setItem(OPEN_KEY, String(visible));
    clearTimeout(timer);
    if (visible) void load();
  }

  function chooseProject(id: string): void {
    projectId.value = id;
    openDataset(null);
    loaded.value = false;
    void load();
  }

  /** Shows a dataset (null: the list of them), from its items. */
  function openDataset(id: string | null): void {
    clearTimeout(timer);
    datasetId.value = id;
    if (id) sessionStorage.setItem(DATASET_KEY, id);
    else sessionStorage.removeItem(DATASET_KEY);
    detail.value = null;
    detailError.value = null;
    experiments.value = [];
    experimentId.value = null;
    experiment.value = null;
    comparison.value = null;
    comparisonError.value = null;
    if (id) void loadDataset();
  }

  /** Runs an action and says how it went; false when it failed (the form keeps what was typed). */
  async function act(action: () => Promise<unknown>, done: string): Promise<boolean> {
    try {
      await action();
      notice.value = { ok: true, text: done };
      return true;
    } catch (e) {
      notice.value = { ok: false, text: errorMessage(e) };
      return false;
    }
  }

  async function create(name: string, description?: string): Promise<boolean> {
    let made: Dataset | null = null;
    const ok = await act(async () => {
      made = await datasetsApi.create(projectId.value!, { name, ...(description && { description }) });
    }, `Dataset ${name} created.`);
    await load();
    if (made) openDataset((made as Dataset).id);
    return ok;
  }

  async function removeDataset(dataset: Dataset): Promise<boolean> {
    const ok = await act(() => datasetsApi.remove(dataset.id), `Dataset ${dataset.name} deleted.`);
    if (ok && datasetId.value === dataset.id) openDataset(null);
    await load();
    return ok;
  }

  /** Adds an item to the dataset shown; the refusal is thrown to the form, which says it beside its fields. */
  async function addItem(body: NewDatasetItem): Promise<DatasetItem> {
    const item = await datasetsApi.addItem(datasetId.value!, body);
    notice.value = { ok: true, text: `Item ${item.position} added.` };
    await loadDataset();
    return item;
  }

  /** Changes an item; the refusal is thrown to its form. */
  async function updateItem(item: DatasetItem, patch: DatasetItemPatch): Promise<void> {
    await datasetsApi.updateItem(item.dataset_id, item.id, patch);
    notice.value = { ok: true, text: `Item ${item.position} saved.` };
    await loadDataset();
  }

  async function removeItem(item: DatasetItem): Promise<void> {
    await act(() => datasetsApi.removeItem(item.dataset_id, item.id), `Item ${item.position} deleted.`);
    await loadDataset();
  }

  /** Starts an experiment on the dataset shown and shows it; the refusal is thrown to the form. */
  async function startExperiment(body: ExperimentRequest): Promise<void> {
    const started = await experimentsApi.start(datasetId.value!, body);
    notice.value = { ok: true, text: `Experiment on ${started.model} started.` };
    experiments.value = [started, ...experiments.value.filter((e) => e.id !== started.id)];
    await showExperiment(started.id);
  }

  /** Cancels a running experiment, then shows it as it stands. */
  async function cancelExperiment(id: string): Promise<void> {
    const ok = await act(() => experimentsApi.cancel(id), 'Experiment cancelled; what was scored stays.');
    if (ok) {
      await loadDataset();
      if (experimentId.value === id) await readExperiment();
    }
  }

  async function showExperiment(id: string | null): Promise<void> {
    experimentId.value = id;
    if (experiment.value?.id !== id) experiment.value = null;
    experimentError.value = null;
    if (!id) return;
    await readExperiment();
    schedule();
  }

  async function compare(baseId: string, otherId: string): Promise<void> {
    comparisonError.value = null;
    try {
      comparison.value = await experimentsApi.compare(baseId, otherId);
    } catch (e) {
      comparison.value = null;
      comparisonError.value = `The experiments could not be compared: ${errorMessage(e)}`;
    }
  }

  /**
   * A run copied into a dataset (from the run's status line): into `target`, or a new dataset of that name made in
   * the run's project. Answers the dataset; a refusal is thrown to the dialog.
   */
  async function addRun(
    runId: string,
    target: { datasetId: string } | { projectId: string; name: string },
  ): Promise<{ dataset: Dataset | DatasetDetail; item: DatasetItem }> {
    const dataset =
      'datasetId' in target
        ? await datasetsApi.get(target.datasetId)
        : await datasetsApi.create(target.projectId, { name: target.name });
    const item = await datasetsApi.addItem(dataset.id, { run_id: runId });
    if (open.value && projectId.value === dataset.project_id) await load();
    return { dataset, item };
  }

  /** Opens the view on one dataset (after a run was added to it, say). */
  function showDataset(dataset: { id: string; project_id: string }): void {
    projectId.value = dataset.project_id;
    open.value = true;
    sessionStorage.setItem(OPEN_KEY, 'true');
    openDataset(dataset.id);
    void load();
  }

  /** A run of an item (its source, or an experiment's) opened in the studio, on its agent's graph. */
  async function openRun(runId: string): Promise<void> {
    const run = await runsApi.detail(runId);
    await useCatalogStore().select(run.agent);
    await useRunsStore().load(runId);
    show(false);
  }

  watch(
    () => session.scope.projectId,
    (id) => open.value && id && id !== projectId.value && chooseProject(id),
  );

  return {
    open,
    projectId,
    datasets,
    loaded,
    error,
    notice,
    datasetId,
    detail,
    detailError,
    experiments,
    experimentsError,
    experimentId,
    experiment,
    experimentError,
    comparison,
    comparisonError,
    load,
    loadDataset,
    show,
    chooseProject,
    openDataset,
    create,
    removeDataset,
    addItem,
    updateItem,
    removeItem,
    startExperiment,
    cancelExperiment,
    showExperiment,
    compare,
    addRun,
    showDataset,
    openRun,
    clearComparison: () => {
      comparison.value = null;
      comparisonError.value = null;
    },
  };
});
