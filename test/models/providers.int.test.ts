import { describe, expect, it } from 'vitest';
import { useIntegrationServer } from '../helpers/integration';
import { freePort } from '../helpers/ports';
import type { TestServer } from '../helpers/server';
import { readEvents } from '../helpers/sse';
import { numberedTokens } from '../fixtures/fake-models';

const ctx = useIntegrationServer({
  server: ({ model }) => ({
    CLOUD_A_API_KEY: 'gemini-test-key',
    CLOUD_A_BASE_URL: model.url,
    CLOUD_B_API_KEY: 'anthropic-test-key',
    CLOUD_B_BASE_URL: model.url,
    CLOUD_C_API_KEY: 'openai-test-key',
    CLOUD_C_BASE_URL: `${model.url}/v1`,
  }),
});

async function runWith(target: TestServer, modelName: string) {
  return readEvents(
    await target.request('/graphs/summary/run', { method: 'POST', json: { message: 'hello', model: modelName } }),
  );
}

const tokensOf = (events: Awaited<ReturnType<typeof runWith>>, node: string) =>
  events.filter((e) => e.data.type === 'token' && e.data.node === node).map((e) => (e.data as { text: string }).text);

describe('model providers, each through its real client and wire protocol', () => {
  it.each([
    ['the local runtime (Ollama NDJSON)', 'fake-model', 'ollama', '/api/chat'],
    ['local: prefix', 'local:fake-model', 'ollama', '/api/chat'],
    [
      'cloud_a (Gemini streamGenerateContent SSE)',
      'cloud_a:gemini-test',
      'gemini',
      '/v1beta/models/gemini-test:streamGenerateContent',
    ],
    ['cloud_b (Anthropic Messages SSE)', 'cloud_b:claude-test', 'anthropic', '/v1/messages'],
    ['cloud_c (OpenAI Responses SSE)', 'cloud_c:gpt-test', 'openai', '/v1/responses'],
  ])('%s streams tokens in order', async (_name, modelName, provider, path) => {
    ctx.model.reply(['one', ' two', ' three', ' four']);
    const before = ctx.model.recorded.length;
    const events = await runWith(ctx.server, modelName);
    expect(events.at(-1)!.data).toMatchObject({ type: 'run_done', output: 'one two three four' });
    for (const node of ['dispatch', 'execute', 'summarize'])
      expect(tokensOf(events, node)).toEqual(['one', ' two', ' three', ' four']);
    const calls = ctx.model.recorded.slice(before);
    expect(calls).toHaveLength(3);
    expect(calls.every((c) => c.provider === provider && c.path === path)).toBe(true);
    // The provider's own counts are stored with each node: the stand-in reports the four answer tokens it sent.
    const runId = (events[0]!.data as { run_id: string }).run_id;
    const nodes = (await (await ctx.server.request(`/runs/${runId}`)).json()).nodes as Record<string, unknown>[];
    expect(nodes.map((n) => n.output_tokens)).toEqual([4, 4, 4]);
    if (provider === 'ollama') {
      // The runtime's prompt counts, and the time each call waited for a local slot.
      const prompts = ctx.model.prompts.slice(-3).map((p) => p.used_tokens);
      expect(nodes.map((n) => n.prompt_tokens)).toEqual(prompts);
      expect(nodes.every((n) => typeof n.queue_wait_ms === 'number')).toBe(true);
    } else {
      // The prompt counts the stand-in reported as its API does (Gemini's in every chunk, so far), and no slot wait.
      const reported = ctx.model.reported.slice(-3);
      expect(reported.every((r) => r.provider === provider && r.input_tokens > 10)).toBe(true);
      expect(nodes.map((n) => [n.prompt_tokens, n.queue_wait_ms])).toEqual(reported.map((r) => [r.input_tokens, null]));
    }
  });

  it('keeps serving when a run is cancelled, or the server stopped, while a cloud provider streams', async () => {
    // A process of its own: a cut stream that ended it (an unhandled rejection in Gemini's client) shows as an exit.
    const cloudEnv = {
      CLOUD_A_API_KEY: 'gemini-test-key',
      CLOUD_A_BASE_URL: ctx.model.url,
      CLOUD_B_API_KEY: 'anthropic-test-key',
      CLOUD_B_BASE_URL: ctx.model.url,
      CLOUD_C_API_KEY: 'openai-test-key',
      CLOUD_C_BASE_URL: `${ctx.model.url}/v1`,
    };
    const server = await ctx.spawn(cloudEnv);
    for (const model of ['cloud_a:gemini-test', 'cloud_b:claude-test', 'cloud_c:gpt-test']) {
      ctx.model.reply(numberedTokens(400), 10);
      let cancelled: Promise<Response> | undefined;
      let runId = '';
      const events = await readEvents(
        await server.request('/graphs/summary/run', { method: 'POST', json: { message: 'hello', model } }),
        (e) => {
          if (e.data.type === 'run_start') runId = (e.data as { run_id: string }).run_id;
          if (e.data.type === 'token' && !cancelled) {
            cancelled = server.request(`/runs/${runId}/cancel`, { method: 'POST', json: { reason: 'enough' } });
          }
        },
      );
      expect((await cancelled!).status).toBe(200);
      expect(events.at(-1)!.data, model).toMatchObject({ type: 'run_cancelled', reason: 'enough' });
      // Still the same process, serving.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(server.child.exitCode, `${model}: ${server.output()}`).toBeNull();
      expect((await server.request('/health')).status).toBe(200);
    }
    // A stop while Gemini streams is a clean one.
    ctx.model.reply(numberedTokens(400), 10);
    const streaming = server.request('/graphs/summary/run', {
      method: 'POST',
      json: { message: 'hello', model: 'cloud_a:gemini-test' },
    });
    let stoppedRun = '';
    await readEvents(await streaming, (e) => {
      if (e.data.type === 'run_start') stoppedRun = (e.data as { run_id: string }).run_id;
      if (e.data.type === 'token') server.child.kill('SIGTERM');
    }).catch(() => undefined);
    expect(await server.exited, server.output()).toBe(0);
    // The stopped process handed its run over: the file's other server (same database) takes it on. It is
    // cancelled there, so it does not stream into the tests that follow (it would take their scripted replies).
    const cancel = await ctx.server.request(`/runs/${stoppedRun}/cancel`, { method: 'POST', json: { reason: 'done' } });
    expect([200, 409]).toContain(cancel.status);
    await expect
      .poll(async () => (await (await ctx.server.request(`/runs/${stoppedRun}`)).json()).status, { timeout: 15_000 })
      .toMatch(/^(cancelled|completed|failed)$/);
  });

  it('stores output with a NUL character without it: the run completes and its node rows close', async () => {
    ctx.model.reply(['bin', '\u0000ary', ' output']);
    const events = await runWith(ctx.server, 'fake-model');
    expect(events.at(-1)!.data).toMatchObject({ type: 'run_done' });
    const runId = (events[0]!.data as { run_id: string }).run_id;
    const detail = await (await ctx.server.request(`/runs/${runId}`)).json();
    expect(detail).toMatchObject({ status: 'completed', output: 'binary output', error_detail: null });
    expect(detail.nodes.map((n: { status: string; output: string }) => [n.status, n.output])).toEqual([
      ['completed', 'binary output'],
      ['completed', 'binary output'],
      ['completed', 'binary output'],
    ]);
  });

  it('sends each cloud provider its key the way its API expects', () => {
    const header = (provider: string, name: string) =>
      ctx.model.recorded.find((r) => r.provider === provider)?.headers[name];
    expect(header('gemini', 'x-goog-api-key')).toBe('gemini-test-key');
    expect(header('anthropic', 'x-api-key')).toBe('anthropic-test-key');
    expect(header('openai', 'authorization')).toBe('Bearer openai-test-key');
  });

  it('refuses a model of a provider whose key is not set, naming the variable', async () => {
    const plain = await ctx.start();
    try {
      const res = await plain.request('/graphs/summary/run', {
        method: 'POST',
        json: { message: 'x', model: 'cloud_b:claude-test' },
      });
      expect(res.status).toBe(400);
      expect((await res.json()).error.message).toBe(
        'model "cloud_b:claude-test" needs CLOUD_B_API_KEY, which is not set',
      );
      const models = await (await plain.request('/models')).json();
      expect(models.providers.map((p: { id: string; configured: boolean }) => [p.id, p.configured])).toEqual([
        ['local', true],
        ['cloud_a', false],
        ['cloud_b', false],
        ['cloud_c', false],
      ]);
    } finally {
      await plain.close();
    }
  });

  it('lists models by provider, the local ones from the runtime', async () => {
    const models = await (await ctx.server.request('/models')).json();
    const local = models.providers.find((p: { id: string }) => p.id === 'local');
    expect(local).toMatchObject({ configured: true, reachable: true, error: null });
    expect(local.models.map((m: { id: string }) => m.id)).toEqual(['fake-model', 'llama3.2']);
    const anthropic = models.providers.find((p: { id: string }) => p.id === 'cloud_b');
    expect(anthropic.configured).toBe(true);
    expect(anthropic.models[0].id).toMatch(/^cloud_b:/);
  });

  it('reports the runtime on /health, without its address (the endpoint is public)', async () => {
    const health = await (await fetch(`${ctx.server.url}/health`)).json();
    expect(health.local_runtime).toMatchObject({ reachable: true, models: ['fake-model', 'llama3.2'], error: null });
    // The models in memory, as /api/ps lists them (the stand-in's models without a load delay are all loaded).
    expect(health.local_runtime.loaded.map((m: { name: string }) => m.name)).toEqual(['fake-model', 'llama3.2']);
    expect(JSON.stringify(health)).not.toContain(new URL(ctx.model.url).host);
  });

  it('takes credentials in LOCAL_LLM_BASE as an Authorization header and never shows or logs them', async () => {
    const password = 'runtime-password-4711';
    const withCredentials = ctx.model.url.replace('http://', `http://svc-runtime:${password}@`);
    const guarded = await ctx.start({ LOCAL_LLM_BASE: withCredentials });
    try {
      ctx.model.reply(['fine']);
      const before = ctx.model.recorded.length;
      expect((await runWith(guarded, 'fake-model')).at(-1)!.data.type).toBe('run_done');
      // Its three calls to the runtime, each with the credentials (the file's other server makes none now).
      const calls = ctx.model.recorded.slice(before);
      expect(calls.map((c) => c.provider)).toEqual(['ollama', 'ollama', 'ollama']);
      for (const call of calls)
        expect(call.headers.authorization).toBe(`Basic ${Buffer.from(`svc-runtime:${password}`).toString('base64')}`);
      const models = await (await guarded.request('/models')).json();
      expect(models.providers[0]).toMatchObject({ name: `Local runtime (${ctx.model.url}/)`, reachable: true });
      const health = await (await fetch(`${guarded.url}/health`)).text();
      for (const shown of [JSON.stringify(models), health]) {
        expect(shown).not.toContain(password);
        expect(shown).not.toContain('svc-runtime');
      }
    } finally {
      await guarded.close();
    }
    const closed = `http://svc-runtime:${password}@127.0.0.1:${await freePort()}`;
    const down = await ctx.start({ LOCAL_LLM_BASE: closed });
    try {
      const events = await runWith(down, 'fake-model');
      const detail = (events.at(-1)!.data as { error_detail: string }).error_detail;
      expect(detail).toBe(
        `ConnectionRefusedError: cannot reach the local model runtime at ${new URL(closed).origin}/ (connection refused): is it running?`,
      );
      const models = await (await down.request('/models')).json();
      expect(JSON.stringify(models)).not.toContain(password);
      // A line that quotes the configured address (an operator's own mistake, say) still hides the password.
      down.logs.length = 0;
      const { getLogger } = await import('../../src-server/log');
      getLogger('svc.models').warn(`runtime at ${closed} is down`);
      expect(down.logs.join('')).toContain('runtime at http://***:***@127.0.0.1');
      expect(down.logs.join('')).not.toContain(password);
    } finally {
      await down.close();
    }
  });
});

describe('local runtime failures keep the documented texts', () => {
  it('a runtime that is not running: ConnectionRefusedError naming the address, in the run and in /health', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const down = await ctx.start({ LOCAL_LLM_BASE: closed });
    try {
      const events = await runWith(down, 'fake-model');
      const expected = `ConnectionRefusedError: cannot reach the local model runtime at ${closed} (connection refused): is it running?`;
      expect(events.at(-1)!.data).toMatchObject({ type: 'run_error', error_detail: expected });
      const runId = (events[0]!.data as { run_id: string }).run_id;
      expect((await (await down.request(`/runs/${runId}`)).json()).error_detail).toBe(expected);
      const health = await (await down.request('/health')).json();
      expect(health.local_runtime).toMatchObject({
        reachable: false,
        error: 'ConnectionRefusedError: cannot reach the local model runtime (connection refused): is it running?',
      });
      const models = await (await down.request('/models')).json();
      expect(models.providers[0]).toMatchObject({ reachable: false, error: expected, models: [] });
    } finally {
      await down.close();
    }
  });

  it('a model that is not pulled: the runtime\'s "not found" text', async () => {
    const events = await runWith(ctx.server, 'missing-model');
    expect(events.at(-1)!.data).toMatchObject({
      type: 'run_error',
      error_detail: 'ResponseError: model "missing-model" not found, try pulling it first',
    });
  });
});
