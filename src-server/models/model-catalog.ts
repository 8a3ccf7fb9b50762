import type { Config } from '../config';
import { errorDetail } from '../contracts/errors';
import type { LocalContext, Models } from '../contracts/models';
import { CLOUD_PROVIDERS } from './cloud-providers';
import { describeConnectionError } from './errors';
import { fullModelName, loadedModels, modelWindow, type LoadedModel } from './local-runtime';
import { parseModel } from './model-ref';
import { runtimeAddress, shownAddress } from './runtime-address';

export interface LocalRuntimeStatus {
  reachable: boolean;
  models: string[];
  /** The models loaded now (`/api/ps`). */
  loaded: LoadedModel[];
  error: string | null;
}

/**
 * Asks the runtime for its pulled models; an unreachable runtime is reported, never thrown. `showAddress` false
 * keeps the runtime's address out of the error, for the public /health.
 */
export async function localRuntimeStatus(
  config: Config,
  { showAddress = true, timeoutMs = 2000 }: { showAddress?: boolean; timeoutMs?: number } = {},
): Promise<LocalRuntimeStatus> {
  const address = runtimeAddress(config.LOCAL_LLM_BASE);
  try {
    const res = await fetch(new URL('/api/tags', address.url), {
      headers: address.headers,
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!res.ok)
      return { reachable: false, models: [], loaded: [], error: `the runtime answered ${res.status} to /api/tags` };
    const body = (await res.json()) as { models?: { name: string }[] };
    // An older runtime without /api/ps still lists its models.
    const loaded = await loadedModels(config.LOCAL_LLM_BASE, timeoutMs).catch(() => []);
    return { reachable: true, models: (body.models ?? []).map((m) => m.name), loaded, error: null };
  } catch (error) {
    const described = describeConnectionError(error, 'the local model runtime', showAddress ? address.url : undefined);
    return { reachable: false, models: [], loaded: [], error: errorDetail(described) };
  }
}

/** The window a local model's calls get, and why the budget is lower when it is. */
async function localContext(config: Config, model: string): Promise<LocalContext> {
  const window = await modelWindow(config, model);
  return {
    context_length: window.context_length,
    num_ctx: window.num_ctx,
    budget: window.budget,
    answer_tokens: window.answer,
    lowered: window.lowered,
    message: window.lowered
      ? `${model} holds ${window.context_length} tokens: its prompts get ${window.budget} ` +
        `(LOCAL_LLM_MAX_CONTEXT_TOKENS is ${config.LOCAL_LLM_MAX_CONTEXT_TOKENS}) and its answers ${window.answer}`
      : null,
  };
}

/** Whether the default model can run: a local default the runtime does not have fails every run that relies on it. */
function defaultModel(id: string, local: LocalRuntimeStatus): Models['default_model'] {
  const { provider, name } = parseModel(id);
  if (provider !== 'local' || !local.reachable) return { id, available: null, message: null };
  const available = local.models.some((m) => fullModelName(m) === fullModelName(name));
  return {
    id,
    available,
    message: available
      ? null
      : `DEFAULT_MODEL "${id}" is not among the local runtime's models` +
        (local.models.length
          ? `: choose one of ${local.models.join(', ')}, or pull it`
          : ': pull it, or choose another'),
  };
}

/**
 * GET /models: every model grouped by provider, with whether the provider is configured, and whether the default
 * model (DEFAULT_MODEL, or the one chosen in the studio) can run.
 */
export async function listModels(config: Config, defaultModelId: string): Promise<Models> {
  const local = await localRuntimeStatus(config);
  return {
    providers: [
      {
        id: 'local',
        name: `Local runtime (${shownAddress(config.LOCAL_LLM_BASE)})`,
        configured: true,
        reachable: local.reachable,
        error: local.error,
        models: await Promise.all(
          local.models.map(async (name) => ({ id: name, name, context: await localContext(config, name) })),
        ),
      },
      ...Object.values(CLOUD_PROVIDERS).map((provider) => {
        const configured = Boolean(config[provider.keyVariable]);
        return {
          id: provider.id,
          name: provider.name,
          configured,
          reachable: null,
          error: configured ? null : `set ${provider.keyVariable} to enable`,
          models: provider.models.map((name) => ({ id: `${provider.id}:${name}`, name })),
        };
      }),
    ],
    default_model: defaultModel(defaultModelId, local),
  };
}
