import type { Config } from '../config';
import { getLogger } from '../log';
import { runtimeAddress } from './runtime-address';

const log = getLogger('svc.models');

/**
 * What the service knows of the local runtime (Ollama) beyond its list of models: each model's own context length
 * and whether it can think (`/api/show`, read once per model and kept), which models are loaded (`/api/ps`), and
 * how long a model took to load the last time. Kept per runtime address for the life of the process.
 */

/** A model's context length as its metadata gives it (`<architecture>.context_length`), and whether it thinks. */
export interface ModelInfo {
  context_length: number | null;
  thinking: boolean;
  /** Whether it calls tools; null when the runtime lists no capabilities (older versions): the call finds out. */
  tools: boolean | null;
}

/** The context window of one model's calls: constant per model, because a new `num_ctx` reloads the model. */
export interface ContextWindow {
  /** `options.num_ctx`: the prompt budget plus the room for the answer, at most the model's context length. */
  num_ctx: number;
  /** Estimated tokens the prompt may take: LOCAL_LLM_MAX_CONTEXT_TOKENS, or less when the model holds less. */
  budget: number;
  /** `options.num_predict`: the room left for the answer (reasoning included). */
  answer: number;
  /** The model's own context length, when the runtime told it. */
  context_length: number | null;
  /** True when the budget was lowered because the model holds less than the budget plus the answer. */
  lowered: boolean;
}

export interface LoadedModel {
  name: string;
  /** The context window it was loaded with, when the runtime says (newer Ollama versions do). */
  context_length: number | null;
  expires_at: string | null;
}

/** A model the runtime has loaded counts as loaded this long after a call to it ended, without asking again. */
const LOADED_FRESH_MS = 60_000;
/** A call whose load took less than this did not wait for a load (the runtime reports a few ms when loaded). */
const LOAD_SEEN_NS = 500_000_000;
/** Until a load of a model has been seen, it is assumed to take this long (a mid-size model from an SSD). */
export const ASSUMED_LOAD_S = 10;

interface RuntimeMemory {
  info: Map<string, Promise<ModelInfo | null>>;
  loadedUntil: Map<string, number>;
  lastLoadS: Map<string, number>;
  /** The `/api/ps` request under way, shared: many runs starting at once ask the runtime once, not once each. */
  loadedAsk: Promise<LoadedModel[]> | null;
}

const memories = new Map<string, RuntimeMemory>();

function memory(base: string): RuntimeMemory {
  let found = memories.get(base);
  if (!found) {
    found = { info: new Map(), loadedUntil: new Map(), lastLoadS: new Map(), loadedAsk: null };
    memories.set(base, found);
  }
  return found;
}

/** Ollama names a model without a tag `<name>:latest`. */
export function fullModelName(model: string): string {
  return model.includes(':') ? model : `${model}:latest`;
}

async function askRuntime<T>(base: string, path: string, init: RequestInit, timeoutMs: number): Promise<T | null> {
  const address = runtimeAddress(base);
  const res = await fetch(new URL(path, address.url), {
    ...init,
    headers: { ...address.headers, 'content-type': 'application/json' },
    signal: AbortSignal.timeout(timeoutMs),
  });
  if (!res.ok) return null;
  return (await res.json()) as T;
}

/**
 * The model's context length and capabilities, read once from `/api/show` and kept. Null when the runtime does not
 * know the model or cannot be reached (asked again next time).
 */
export function modelInfo(base: string, model: string): Promise<ModelInfo | null> {
  const cache = memory(base).info;
  const key = fullModelName(model);
  let found = cache.get(key);
  if (!found) {
    found = (async () => {
      try {
        const body = await askRuntime<{ model_info?: Record<string, unknown>; capabilities?: string[] }>(
          base,
          '/api/show',
          { method: 'POST', body: JSON.stringify({ model }) },
          5000,
        );
        if (!body) return null;
        const info = body.model_info ?? {};
        const arch = info['general.architecture'];
        const length =
          info[`${String(arch)}.context_length`] ??
          Object.entries(info).find(([key]) => key.endsWith('.context_length'))?.[1];
        return {
          context_length: typeof length === 'number' && length > 0 ? length : null,
          thinking: (body.capabilities ?? []).includes('thinking'),
          tools: body.capabilities ? body.capabilities.includes('tools') : null,
        };
      } catch (error) {
        log.debug(`asking the runtime about ${model} failed: ${(error as Error).message}`);
        return null;
      }
    })();
    cache.set(key, found);
    // What could not be read is asked again on the next call.
    void found.then((info) => {
      if (!info) cache.delete(key);
    });
  }
  return found;
}

/** The context window of a model's calls: the budget plus the answer's room, within what the model holds. */
export function contextWindow(config: Config, contextLength: number | null): ContextWindow {
  const budget = config.LOCAL_LLM_MAX_CONTEXT_TOKENS;
  const answer = config.LOCAL_LLM_MAX_ANSWER_TOKENS;
  if (contextLength === null || contextLength >= budget + answer) {
    return { num_ctx: budget + answer, budget, answer, context_length: contextLength, lowered: false };
  }
  const room = Math.min(answer, Math.floor(contextLength / 2));
  return {
    num_ctx: contextLength,
    budget: contextLength - room,
    answer: room,
    context_length: contextLength,
    lowered: true,
  };
}

/** The window of `model`'s calls, and whether the runtime says it thinks and calls tools. */
export async function modelWindow(
  config: Config,
  model: string,
): Promise<ContextWindow & { thinking: boolean; tools: boolean | null }> {
  const info = await modelInfo(config.LOCAL_LLM_BASE, model);
  return {
    ...contextWindow(config, info?.context_length ?? null),
    thinking: info?.thinking ?? false,
    tools: info?.tools ?? null,
  };
}

/** The models the runtime has loaded (`/api/ps`); throws when it cannot be asked. */
export async function loadedModels(base: string, timeoutMs = 2000): Promise<LoadedModel[]> {
  const body = await askRuntime<{ models?: { name: string; context_length?: number; expires_at?: string }[] }>(
    base,
    '/api/ps',
    { method: 'GET' },
    timeoutMs,
  );
  if (!body) throw new Error('the runtime did not answer /api/ps');
  return (body.models ?? []).map((m) => ({
    name: m.name,
    context_length: typeof m.context_length === 'number' ? m.context_length : null,
    expires_at: m.expires_at ?? null,
  }));
}

/**
 * Whether a call to `model` with this `num_ctx` waits for the runtime to load it first: the model is not loaded, or is
 * loaded with another context window (the runtime reloads it). Asks `/api/ps` unless a call to it ended in the last
 * minute; when the runtime cannot tell, says no.
 */
export async function needsLoad(base: string, model: string, numCtx: number): Promise<boolean> {
  const mem = memory(base);
  const name = fullModelName(model);
  if ((mem.loadedUntil.get(name) ?? 0) > Date.now()) return false;
  let loaded: LoadedModel[];
  try {
    mem.loadedAsk ??= loadedModels(base, 1000).finally(() => {
      mem.loadedAsk = null;
    });
    loaded = await mem.loadedAsk;
  } catch {
    return false;
  }
  const entry = loaded.find((m) => fullModelName(m.name) === name);
  // Some versions report the window times OLLAMA_NUM_PARALLEL: a multiple of num_ctx is the same window.
  if (entry && (entry.context_length === null || entry.context_length % numCtx === 0)) {
    const expires = entry.expires_at ? Date.parse(entry.expires_at) : NaN;
    mem.loadedUntil.set(name, Math.min(Date.now() + LOADED_FRESH_MS, Number.isNaN(expires) ? Infinity : expires));
    return false;
  }
  return true;
}

/** Forgets that `model` was loaded (it was unloaded on purpose): the next call asks `/api/ps` again. */
export function forgetLoaded(base: string, model: string): void {
  memory(base).loadedUntil.delete(fullModelName(model));
}

/** How long the last load of `model` took, in seconds, when one was seen. */
export function lastLoadS(base: string, model: string): number | null {
  return memory(base).lastLoadS.get(fullModelName(model)) ?? null;
}

/** A call ended: the model is loaded now, and the load it waited for (if any) is remembered. */
export function callEnded(base: string, model: string, loadDurationNs: number | null): void {
  const mem = memory(base);
  const name = fullModelName(model);
  if (loadDurationNs !== null && loadDurationNs >= LOAD_SEEN_NS) {
    mem.lastLoadS.set(name, Number((loadDurationNs / 1e9).toFixed(1)));
  }
  mem.loadedUntil.set(name, Date.now() + LOADED_FRESH_MS);
}
