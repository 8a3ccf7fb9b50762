import type { ProviderId } from '../contracts/models';

export interface ModelRef {
  provider: ProviderId;
  /** The provider's own model name, without our prefix. */
  name: string;
}

const PREFIXES: Record<string, ProviderId> = {
  local: 'local',
  cloud_a: 'cloud_a',
  cloud_b: 'cloud_b',
  cloud_c: 'cloud_c',
};

/**
 * Model strings: no prefix or `local:` → the local runtime; `cloud_a:`, `cloud_b:`, `cloud_c:` →
 * the cloud providers. An unknown prefix is part of a local model name (Ollama names may contain `:`,
 * as in `llama3.2:3b`).
 */
export function parseModel(model: string): ModelRef {
  const colon = model.indexOf(':');
  const provider = colon > 0 ? PREFIXES[model.slice(0, colon)] : undefined;
  if (!provider) return { provider: 'local', name: model };
  return { provider, name: model.slice(colon + 1) };
}
