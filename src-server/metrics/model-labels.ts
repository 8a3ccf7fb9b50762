import type { ProviderId } from '../contracts/models';
import { errorMessage } from '../contracts/errors';
import { getLogger } from '../log';
import { CLOUD_PROVIDERS } from '../models/cloud-providers';
import { fullModelName } from '../models/local-runtime';
import { parseModel } from '../models/model-ref';

const log = getLogger('svc.models');

/** The model label of a call whose model is not in the catalog. */
export const OTHER_MODEL = 'other';

/** The local runtime's list is read again on a model it does not name, at most this often. */
const LOCAL_REFRESH_MS = 30_000;

/**
 * The `provider` and `model` labels of a model call. A run's model string is user input: as a label it would make a
 * series of every string anyone sends. So a model is named only when it is in the catalog, the models `GET /models`
 * lists (the cloud providers' own lists and the local runtime's models, as `<name>:<tag>`) and DEFAULT_MODEL; any
 * other is `other`.
 */
export class ModelLabels {
  private readonly cloud: ReadonlyMap<ProviderId, ReadonlySet<string>>;
  private readonly defaults: ReadonlySet<string>;
  private local: ReadonlySet<string> = new Set();
  private readAt = -Infinity;
  private reading?: Promise<void>;

  /** `localModels`: the local runtime's models, as its `/api/tags` lists them. */
  constructor(
    defaultModel: string,
    private readonly localModels: () => Promise<string[]>,
  ) {
    this.cloud = new Map(Object.values(CLOUD_PROVIDERS).map((p) => [p.id, new Set(p.models)]));
    const named = parseModel(defaultModel);
    this.defaults = new Set([
      `${named.provider}:${named.provider === 'local' ? fullModelName(named.name) : named.name}`,
    ]);
    this.readLocal();
  }

  label(model: string): { provider: ProviderId; model: string } {
    const { provider, name } = parseModel(model);
    const shown = provider === 'local' ? fullModelName(name) : name;
    if (this.defaults.has(`${provider}:${shown}`)) return { provider, model: shown };
    if (provider !== 'local') return { provider, model: this.cloud.get(provider)?.has(name) ? name : OTHER_MODEL };
    if (this.local.has(shown)) return { provider, model: shown };
    // A model pulled since the list was read: named once the list is read again.
    this.readLocal();
    return { provider, model: OTHER_MODEL };
  }

  /** Resolves once the local runtime's list has been read (again, when it was not read in the last 30 s). */
  readLocal(): Promise<void> {
    if (this.reading || performance.now() - this.readAt < LOCAL_REFRESH_MS) return this.reading ?? Promise.resolve();
    this.readAt = performance.now();
    this.reading = this.localModels()
      .then((models) => {
        this.local = new Set(models.map(fullModelName));
      })
      .catch((error) => log.debug(`reading the local runtime's models for the metrics failed: ${errorMessage(error)}`))
      .finally(() => {
        this.reading = undefined;
      });
    return this.reading;
  }
}
