import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal';
import { conflict, errorMessage, forbidden, notFound } from '../contracts/errors';
import type { LocalModel, LocalModels, ModelPull, PullProgress } from '../contracts/models';
import type { MeasuredSpeed, ModelPullsRepository } from '../db/model-pulls.repository';
import { getLogger } from '../log';
import { fullModelName, lastLoadS, loadedModels, modelInfo } from '../models/local-runtime';
import { parseModel } from '../models/model-ref';
import {
  assertModelName,
  checkModelName,
  deleteModel,
  pullModel,
  runtimeModels,
  type RuntimeModel,
} from '../models/runtime-models';
import type { Config } from '../config';
import type { DefaultModel } from './default-model';

const log = getLogger('svc.api');

/** How often a pull writes its progress (and reads whether it was cancelled). */
const PROGRESS_MS = 300;

export interface LocalModelsServiceDeps {
  config: Config;
  pulls: ModelPullsRepository;
  speeds(): Promise<MeasuredSpeed[]>;
  defaultModel: DefaultModel;
  /** Throws when a model's provider is not configured (runs.service's check). */
  checkModel(model: string): void;
}

/** On a shared server the instance administrator manages the runtime's models; with auth off, the local user. */
function requireManager(principal: Principal): void {
  if (!principal.instanceAdmin) {
    throw forbidden('pulling, deleting and choosing the default model need the instance administrator');
  }
}

/**
 * The local runtime's models as the studio's Models view shows them (docs/models.md): what the runtime reports, what
 * this service measured, pulls with their progress kept in PostgreSQL (every process and studio sees them, a reload
 * finds them), deleting, and the default model.
 */
export function localModelsService(deps: LocalModelsServiceDeps) {
  const { config, pulls } = deps;
  const base = config.LOCAL_LLM_BASE;
  /** Pulls this process runs, to stop at once when cancelled here. */
  const running = new Map<string, AbortController>();
  let stopping = false;

  async function describe(name: string, speeds: MeasuredSpeed[], loaded: Map<string, string | null>) {
    const info = await modelInfo(base, name);
    const measured = speeds.filter((s) => fullModelName(parseModel(s.model).name) === fullModelName(name));
    const phases = measured.reduce((n, s) => n + s.phases, 0);
    const best = measured.sort((a, b) => b.phases - a.phases)[0];
    return {
      context_length: info?.context_length ?? null,
      capabilities: [...(info?.tools ? ['tools'] : []), ...(info?.thinking ? ['thinking'] : [])],
      loaded_until: loaded.has(fullModelName(name)) ? (loaded.get(fullModelName(name)) ?? null) : null,
      measured: { phases, tokens_per_s: best?.tokens_per_s ?? null, load_s: lastLoadS(base, name) },
    };
  }

  async function run(pull: ModelPull): Promise<void> {
    const controller = new AbortController();
    running.set(pull.id, controller);
    let latest: PullProgress = { status: 'starting', total: 0, completed: 0 };
    let writing = false;
    const write = async () => {
      if (writing) return;
      writing = true;
      try {
        if (await pulls.progress(pull.id, latest)) controller.abort();
      } catch (error) {
        log.warn(`writing the progress of pulling ${pull.model} failed: ${errorMessage(error)}`);
      } finally {
        writing = false;
      }
    };
    const timer = setInterval(() => void write(), PROGRESS_MS);
    try {
      await pullModel(base, pull.model, controller.signal, (progress) => (latest = progress));
      await pulls.progress(pull.id, latest);
      await pulls.finish(pull.id, 'done', null);
      log.info(`model ${pull.model} pulled (started by ${pull.started_by})`);
    } catch (error) {
      const cancelled = controller.signal.aborted && !stopping;
      const why = stopping ? 'the server stopped; pull it again' : errorMessage(error);
      await pulls.finish(pull.id, cancelled ? 'cancelled' : 'failed', cancelled ? null : why).catch(() => undefined);
      log.info(`pulling model ${pull.model} ${cancelled ? 'cancelled' : `failed: ${why}`}`);
    } finally {
      clearInterval(timer);
      running.delete(pull.id);
    }
  }

  return {
    /** The model runs use when they name none. */
    defaultModelId: () => deps.defaultModel.current(),

    async list(principal: Principal): Promise<LocalModels> {
      // One /api/tags: the list with its details says whether the runtime answers.
      const listing = runtimeModels(base).then(
        (found) => ({ found, error: null }),
        (error: unknown) => ({ found: [] as RuntimeModel[], error: errorMessage(error) }),
      );
      const [{ found, error }, speeds, recent] = await Promise.all([listing, deps.speeds(), pulls.recent()]);
      const reachable = error === null;
      const loaded = new Map(
        (reachable ? await loadedModels(base).catch(() => []) : []).map((m) => [fullModelName(m.name), m.expires_at]),
      );
      const models: LocalModel[] = [];
      for (const model of found) models.push({ ...model, ...(await describe(model.name, speeds, loaded)) });
      return {
        reachable,
        error,
        models,
        // A pull's detail and error are the runtime's own words (hosts, addresses): for those who manage it.
        pulls: principal.instanceAdmin ? recent : [],
        default_model: deps.defaultModel.current(),
        may_manage: principal.instanceAdmin,
      };
    },

    /** Starts pulling a model; the pull goes on in this process, its progress in PostgreSQL. */
    async pull(principal: Principal, name: string): Promise<ModelPull> {
      requireManager(principal);
      await checkModelName(name);
      const pull = await pulls.start(randomUUID(), name, principal.name);
      if (!pull) throw conflict(`${name} is being pulled already: follow that pull, or cancel it first`);
      log.info(`pulling model ${name} (by ${principal.name})`);
      void run(pull);
      return pull;
    },

    async pullStatus(principal: Principal, id: string): Promise<ModelPull> {
      requireManager(principal);
      const pull = await pulls.get(id);
      if (!pull) throw notFound(`model pull ${id} not found`);
      return pull;
    },

    /** Cancels a pull under way, on whichever process runs it (it reads the request within a moment). */
    async cancel(principal: Principal, id: string): Promise<ModelPull> {
      requireManager(principal);
      const pull = await pulls.requestCancel(id);
      if (!pull) {
        const ended = await pulls.get(id);
        if (!ended) throw notFound(`model pull ${id} not found`);
        throw conflict(`the pull of ${ended.model} has ended (${ended.status}): there is nothing to cancel`);
      }
      running.get(id)?.abort();
      return pull;
    },

    async remove(principal: Principal, name: string): Promise<void> {
      requireManager(principal);
      assertModelName(name, 'model');
      await deleteModel(base, name);
      log.info(`model ${name} deleted from the local runtime (by ${principal.name})`);
    },

    /** Chooses the model runs use when they name none; a local one must be among the runtime's models. */
    async setDefault(principal: Principal, model: string): Promise<string> {
      requireManager(principal);
      deps.checkModel(model);
      const { provider, name } = parseModel(model);
      if (provider === 'local') {
        assertModelName(name, 'model');
        const have = (await runtimeModels(base)).map((m) => fullModelName(m.name));
        if (!have.includes(fullModelName(name))) {
          throw notFound(`the local runtime has no model "${name}": pull it first`);
        }
      }
      await deps.defaultModel.set(model, principal.name);
      return model;
    },

    /** Stops this process's pulls (the server is stopping): they end as failed, to be pulled again. */
    stop(): void {
      stopping = true;
      for (const controller of running.values()) controller.abort();
    },
  };
}

export type LocalModelsService = ReturnType<typeof localModelsService>;
