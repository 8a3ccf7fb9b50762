import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LocalModels, ModelPull } from '../../src-server/contracts/models';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { addUser, signSession } from '../helpers/sessions';
import { until } from '../helpers/until';

/**
 * The local runtime's models as the studio's Models view manages them (docs/models.md): the list with what the runtime
 * reports and what the service measured, pulls that stream the runtime's progress into PostgreSQL (seen and cancelled
 * from another process), deleting, the default model, and who may.
 */
const SECRET = 'a-session-secret-for-the-model-tests-0123456789';
const API_TOKEN = 'local-models-test-admin-token-0123456789';
const ENV = { AUTH_ENABLED: 'true', SESSION_SECRET: SECRET, SVC_API_TOKEN: API_TOKEN };

const ctx = useIntegrationServer({ server: ENV });
let other: TestServer;
let member: string;

beforeAll(async () => {
  other = await ctx.start(ENV);
  const id = await addUser(ctx.server.pool, 'Mia', [['project', DEFAULT_PROJECT_ID, 'member']]);
  member = await signSession(id, SECRET, '1h', 'Mia');
});
afterAll(async () => {
  await other?.close();
});
beforeEach(() => {
  ctx.model.pull = { steps: 4, paceMs: 0 };
});

const asMember = () => ({ headers: { authorization: `Bearer ${member}` } });
const list = async (server: TestServer = ctx.server) =>
  (await (await server.request('/models/local')).json()) as LocalModels;
const pull = (name: string, server: TestServer = ctx.server, init = {}) =>
  server.request('/models/local/pulls', { method: 'POST', json: { name }, ...init });
const pullNow = async (id: string, server: TestServer = ctx.server) =>
  (await (await server.request(`/models/local/pulls/${id}`)).json()) as ModelPull;

describe("the local runtime's models", () => {
  it('lists what the runtime reports and what the service measured', async () => {
    ctx.model.reply(['one ', 'two ', 'three'], 5);
    const run = await ctx.server.request('/agents/summary/runs', {
      method: 'POST',
      json: { message: 'measure', model: 'fake-model' },
    });
    const { run_id } = (await run.json()) as { run_id: string };
    await until(async () => {
      const status = ((await (await ctx.server.request(`/runs/${run_id}`)).json()) as { status: string }).status;
      return status === 'completed' ? true : undefined;
    });
    const models = await list();
    expect(models).toMatchObject({ reachable: true, may_manage: true, default_model: 'fake-model' });
    const fake = models.models.find((m) => m.name === 'fake-model')!;
    expect(fake).toMatchObject({
      size: 2_019_393_189,
      family: 'llama',
      parameter_size: '3.2B',
      quantization: 'Q4_K_M',
      capabilities: ['tools'],
      loaded_until: expect.any(String),
    });
    expect(fake.context_length).toBeGreaterThan(0);
    expect(fake.measured.phases).toBeGreaterThanOrEqual(3);
    expect(fake.measured.tokens_per_s).toBeGreaterThan(0);
  });

  it("pulls a model with the runtime's progress, seen from another process, and lists it", async () => {
    ctx.model.pull = { steps: 10, paceMs: 60 };
    const started = await pull('qwen3:0.6b');
    expect(started.status).toBe(202);
    const { id, model, status } = (await started.json()) as ModelPull;
    expect({ model, status }).toEqual({ model: 'qwen3:0.6b', status: 'pulling' });
    // Midway, on the other process: some of the bytes, with the runtime's status line.
    const midway = await until(async () => {
      const seen = await pullNow(id, other);
      return seen.completed > 0 && seen.completed < seen.total ? seen : undefined;
    });
    expect(midway.detail).toMatch(/^pulling [0-9a-f]{12}$/);
    const done = await until(async () => {
      const seen = await pullNow(id, other);
      return seen.status === 'done' ? seen : undefined;
    });
    expect(done.completed).toBe(done.total);
    expect(done.total).toBe(2_019_377_376 + 1_429);
    expect((await list(other)).models.map((m) => m.name)).toContain('qwen3:0.6b');
    expect((await list()).pulls[0]).toMatchObject({ id, status: 'done', started_by: 'api-token' });
  });

  it('pulls a model once at a time; a cancel from another process stops it, and it can be pulled again', async () => {
    ctx.model.pull = { steps: 50, paceMs: 100 };
    const { id } = (await (await pull('gemma3:1b')).json()) as ModelPull;
    expect((await pull('gemma3:1b', other)).status).toBe(409);
    await until(async () => ((await pullNow(id)).completed > 0 ? true : undefined));
    const cancelled = await other.request(`/models/local/pulls/${id}/cancel`, { method: 'POST', json: {} });
    expect(cancelled.status).toBe(200);
    const ended = await until(async () => {
      const seen = await pullNow(id);
      return seen.status === 'cancelled' ? seen : undefined;
    });
    expect(ended.completed).toBeLessThan(ended.total);
    expect((await list()).models.map((m) => m.name)).not.toContain('gemma3:1b');
    expect((await other.request(`/models/local/pulls/${id}/cancel`, { method: 'POST', json: {} })).status).toBe(409);
    ctx.model.pull = { steps: 2, paceMs: 0 };
    expect((await pull('gemma3:1b')).status).toBe(202);
  });

  it("refuses a name whose registry is on the server's own network", async () => {
    for (const name of ['127.0.0.1:5000/library/evil', 'localhost/evil', '10.1.2.3/ns/model:latest']) {
      const refused = await pull(name);
      expect(refused.status, name).toBe(400);
      expect((await refused.json()).error.message).toContain("on the server's own network");
    }
    // Three parts name a host whatever it looks like, as the runtime reads them: a name without a dot is one too.
    for (const name of ['vm/library/x', 'localhost/library/x:latest', 'a/b/library/x']) {
      const refused = await pull(name);
      expect(refused.status, name).toBe(400);
      expect((await refused.json()).error.message, name).toMatch(
        /on the server's own network|does not resolve|names no registry host/,
      );
    }
    expect(await ctx.server.pool.query(`SELECT 1 FROM svc_model_pulls WHERE model LIKE '%library/x%'`)).toMatchObject({
      rowCount: 0,
    });
    expect((await pull('not a model')).status).toBe(400);
  });

  it('deletes a model, and chooses the default model runs use', async () => {
    ctx.model.models.push('to-delete');
    const deleted = await ctx.server.request('/models/local/delete', { method: 'POST', json: { model: 'to-delete' } });
    expect(deleted.status).toBe(204);
    expect((await list()).models.map((m) => m.name)).not.toContain('to-delete');
    const again = await ctx.server.request('/models/local/delete', { method: 'POST', json: { model: 'to-delete' } });
    expect(again.status).toBe(404);

    const missing = await ctx.server.request('/models/default', { method: 'PUT', json: { model: 'not-pulled' } });
    expect(missing.status).toBe(404);
    const chosen = await ctx.server.request('/models/default', { method: 'PUT', json: { model: 'llama3.2' } });
    expect(await chosen.json()).toEqual({ model: 'llama3.2' });
    expect((await (await ctx.server.request('/models')).json()).default_model.id).toBe('llama3.2');
    ctx.model.reply(['ok']);
    const run = await ctx.server.request('/agents/summary/runs', { method: 'POST', json: { message: 'which model' } });
    const detail = await (await ctx.server.request(`/runs/${(await run.json()).run_id}`)).json();
    expect(detail.model).toBe('llama3.2');
    await ctx.server.request('/models/default', { method: 'PUT', json: { model: 'fake-model' } });
  });

  it('lets a member see the list, not the pulls, nor pull, cancel, delete or choose the default (403)', async () => {
    const seen = (await (await ctx.server.request('/models/local', asMember())).json()) as LocalModels;
    expect(seen).toMatchObject({ reachable: true, may_manage: false, pulls: [] });
    expect(seen.models.length).toBeGreaterThan(0);
    // The pulls are the runtime's words (its hosts, its errors): the administrator's list has them, a member's not.
    const [earlier] = (await list()).pulls;
    expect(earlier).toBeDefined();
    expect((await ctx.server.request(`/models/local/pulls/${earlier!.id}`, asMember())).status).toBe(403);
    expect((await pull('llama3.2:1b', ctx.server, asMember())).status).toBe(403);
    const del = await ctx.server.request('/models/local/delete', {
      method: 'POST',
      json: { model: 'fake-model' },
      ...asMember(),
    });
    expect(del.status).toBe(403);
    const def = await ctx.server.request('/models/default', {
      method: 'PUT',
      json: { model: 'llama3.2' },
      ...asMember(),
    });
    expect(def.status).toBe(403);
    expect((await def.json()).error.message).toBe(
      'pulling, deleting and choosing the default model need the instance administrator',
    );
  });
});
