import type { Config } from '../config';
import { errorDetail } from '../contracts/errors';
import type { Models } from '../contracts/models';
import { CLOUD_PROVIDERS } from './cloud-providers';
import { describeConnectionError } from './errors';
import { runtimeAddress, shownAddress } from './runtime-address';

export interface LocalRuntimeStatus {
  reachable: boolean;
  models: string[];
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
    if (!res.ok) return { reachable: false, models: [], error: `the runtime answered ${res.status} to /api/tags` };
    const body = (await res.json()) as { models?: { name: string }[] };
    return { reachable: true, models: (body.models ?? []).map((m) => m.name), error: null };
  } catch (error) {
    const described = describeConnectionError(error, 'the local model runtime', showAddress ? address.url : undefined);
    return { reachable: false, models: [], error: errorDetail(described) };
  }
}

/** GET /models: every model grouped by provider, with whether the provider is configured. */
export async function listModels(config: Config): Promise<Models> {
  const local = await localRuntimeStatus(config);
  return {
    providers: [
      {
        id: 'local',
        name: `Local runtime (${shownAddress(config.LOCAL_LLM_BASE)})`,
        configured: true,
        reachable: local.reachable,
        error: local.error,
        models: local.models.map((name) => ({ id: name, name })),
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
  };
}
