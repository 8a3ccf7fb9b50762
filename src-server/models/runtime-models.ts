import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { badRequest, errorMessage, notFound, serviceUnavailable } from '../contracts/errors';
import type { PullProgress } from '../contracts/models';
import { isInternalAddress } from '../net/internal-address';
import { ConnectionRefusedError, describeConnectionError } from './errors';
import { runtimeAddress, shownAddress } from './runtime-address';

/**
 * The local runtime's own model management (Ollama's `/api/tags`, `/api/pull`, `/api/delete`): what it has, pulling
 * a model with its progress stream, deleting one. The rules (who may, one pull at a time, where progress is kept)
 * are the service's (services/local-models.service.ts).
 */

/** A model as `/api/tags` lists it. */
export interface RuntimeModel {
  name: string;
  size: number | null;
  family: string | null;
  parameter_size: string | null;
  quantization: string | null;
  modified_at: string | null;
}

/** What a model name may be: Ollama's `[host/][namespace/]name[:tag]`. */
const MODEL_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*(?::\d{1,5})?(?:\/[A-Za-z0-9._-]+)*(?::[A-Za-z0-9._-]+)?$/;

async function runtimeFetch(base: string, path: string, init: RequestInit): Promise<Response> {
  const address = runtimeAddress(base);
  try {
    return await fetch(new URL(path, address.url), {
      ...init,
      headers: { ...address.headers, 'content-type': 'application/json' },
    });
  } catch (error) {
    if ((error as Error).name === 'AbortError') throw error;
    const described = describeConnectionError(error, 'the local model runtime', address.url);
    // fetch's own message is "fetch failed": what failed is in its cause.
    throw serviceUnavailable(
      described instanceof ConnectionRefusedError
        ? described.message
        : `cannot reach the local model runtime at ${shownAddress(base)}: ${errorMessage((error as { cause?: unknown }).cause ?? error)}`,
    );
  }
}

/** The runtime's error text (`{"error": "…"}`), or its status. */
async function runtimeError(res: Response): Promise<string> {
  const body = (await res.json().catch(() => ({}))) as { error?: unknown };
  return typeof body.error === 'string' ? body.error : `the runtime answered ${res.status}`;
}

export async function runtimeModels(base: string): Promise<RuntimeModel[]> {
  const res = await runtimeFetch(base, '/api/tags', { signal: AbortSignal.timeout(5000) });
  if (!res.ok) throw serviceUnavailable(`the local model runtime answered ${res.status} to /api/tags`);
  const body = (await res.json()) as {
    models?: {
      name: string;
      size?: number;
      modified_at?: string;
      details?: { family?: string; parameter_size?: string; quantization_level?: string };
    }[];
  };
  return (body.models ?? []).map((m) => ({
    name: m.name,
    size: typeof m.size === 'number' ? m.size : null,
    family: m.details?.family ?? null,
    parameter_size: m.details?.parameter_size ?? null,
    quantization: m.details?.quantization_level ?? null,
    modified_at: m.modified_at ?? null,
  }));
}

/** Refuses what is no model name (`field`: the body field that held it), before the runtime is asked. */
export function assertModelName(name: string, field = 'name'): void {
  if (!MODEL_NAME.test(name) || name.length > 200) {
    throw badRequest(`invalid request body: ${field}: "${name.slice(0, 80)}" is not a model name such as llama3.2:3b`, {
      fields: [{ field, message: 'not a model name' }],
    });
  }
}

/**
 * The registry host a model name pulls from, read as Ollama reads a name (`[host/]namespace/model[:tag]`): with three
 * parts or more, everything before the last two is the host, whatever it looks like (`vm/library/x` pulls from `vm`).
 * Two parts are a namespace and a model on the default registry, unless the first looks like a host (a dot, a port,
 * `localhost`): refused as one all the same, so that no runtime reading names otherwise reaches it. Undefined: the
 * default registry.
 */
function registryHost(name: string): string | undefined {
  const parts = name.replace(/:[A-Za-z0-9._-]+$/, '').split('/');
  if (parts.length >= 3) return parts.slice(0, -2).join('/');
  const first = parts[0]!;
  return parts.length === 2 && (first.includes('.') || first.includes(':') || first === 'localhost')
    ? first
    : undefined;
}

/**
 * Refuses a name that is no model name, or whose registry host (`registry.example.com/ns/model`) is on the server's
 * own network: the runtime would fetch from it on the server's behalf, which git clones and webhooks may not either.
 */
export async function checkModelName(name: string): Promise<void> {
  assertModelName(name);
  const named = registryHost(name);
  if (named === undefined) return;
  if (named.includes('/')) {
    throw badRequest(
      `invalid request body: name: "${name.slice(0, 80)}" names no registry host such as host/ns/model`,
      {
        fields: [{ field: 'name', message: 'not a model name' }],
      },
    );
  }
  const host = named.replace(/:\d+$/, '');
  const addresses = isIP(host)
    ? [host]
    : await lookup(host, { all: true, verbatim: true })
        .then((found) => found.map((a) => a.address))
        .catch(() => {
          throw badRequest(`the registry host ${host} of "${name}" does not resolve`);
        });
  if (host === 'localhost' || addresses.some((address) => isInternalAddress(address))) {
    throw badRequest(`"${name}" names the registry ${host}, on the server's own network: pull from a public registry`);
  }
}

/**
 * Pulls a model, reporting the runtime's progress as it streams: the status line, and the bytes of every layer so far
 * (each layer's `total` and `completed` by `digest`, summed). Ends with `success`, or throws the runtime's error.
 */
export async function pullModel(
  base: string,
  name: string,
  signal: AbortSignal,
  report: (progress: PullProgress) => void,
): Promise<void> {
  const res = await runtimeFetch(base, '/api/pull', {
    method: 'POST',
    body: JSON.stringify({ model: name, stream: true }),
    signal,
  });
  if (!res.ok || !res.body) throw new Error(await runtimeError(res));
  const layers = new Map<string, { total: number; completed: number }>();
  let buffered = '';
  const decoder = new TextDecoder();
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, end).trim();
      buffered = buffered.slice(end + 1);
      if (!line) continue;
      const update = JSON.parse(line) as {
        status?: string;
        error?: string;
        digest?: string;
        total?: number;
        completed?: number;
      };
      if (update.error) throw new Error(update.error);
      if (update.digest && typeof update.total === 'number') {
        layers.set(update.digest, { total: update.total, completed: update.completed ?? 0 });
      }
      const sum = (key: 'total' | 'completed') => [...layers.values()].reduce((n, layer) => n + layer[key], 0);
      report({ status: update.status ?? '', total: sum('total'), completed: sum('completed') });
      if (update.status === 'success') return;
    }
  }
  throw new Error('the runtime ended the pull without success');
}

export async function deleteModel(base: string, name: string): Promise<void> {
  const res = await runtimeFetch(base, '/api/delete', {
    method: 'DELETE',
    body: JSON.stringify({ model: name }),
    signal: AbortSignal.timeout(30_000),
  });
  if (res.status === 404) throw notFound(`the local runtime has no model "${name}"`);
  if (!res.ok)
    throw serviceUnavailable(`the local model runtime could not delete "${name}": ${await runtimeError(res)}`);
}
