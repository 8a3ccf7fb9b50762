import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src-server/contracts/common';
import { DEFAULT_PROJECT_ID } from '../../src-server/contracts/tenancy';
import { API_VERSION } from '../../src-server/http/api';
import { useIntegrationServer } from '../helpers/integration';

/**
 * What a script author's tools read in the served /openapi.json: operation names, one parameter name per thing,
 * named event and error types, and for each operation exactly the errors it can answer. Then the other half of
 * the contract: the server takes what the document says it takes.
 */
const TOKEN = 'api-document-test-token';
const ctx = useIntegrationServer({ model: false, server: { AUTH_ENABLED: 'true', SVC_API_TOKEN: TOKEN } });

interface Operation {
  operationId: string;
  parameters?: { name: string; in: string }[];
  requestBody?: unknown;
  responses: Record<string, { description?: string; content?: Record<string, { schema: { $ref?: string } }> }>;
}
type Doc = {
  info: { version: string };
  servers: { url: string }[];
  tags: { name: string; description: string }[];
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Record<string, unknown>> };
};

const loadDocument = async () => (await (await ctx.server.request('/openapi.json')).json()) as Doc;
const operations = (doc: Doc) =>
  Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({ key: `${method.toUpperCase()} ${path}`, path, ...op })),
  );
const statuses = (op: Operation) =>
  Object.keys(op.responses)
    .filter((status) => status !== 'default')
    .map(Number);

describe('the OpenAPI document', () => {
  it('names every operation with a unique verb, and the agent parameter {agent} everywhere', async () => {
    const doc = await loadDocument();
    const ops = operations(doc);
    const ids = ops.map((op) => op.operationId);
    expect(ids.every((id) => /^[a-z][A-Za-z]+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    const byKey = Object.fromEntries(ops.map((op) => [op.key, op.operationId]));
    expect(byKey).toMatchObject({
      'POST /graphs/{agent}/run': 'runAgent',
      'GET /runs/{id}/stream': 'streamRun',
      'POST /threads/{id}/gates/{gate}/approve': 'approveGate',
      'POST /threads/{id}/gates/{gate}/reject': 'rejectGate',
      'POST /runs/{id}/cancel': 'cancelRun',
      'GET /threads': 'listThreads',
      'GET /agents/{agent}/graph-definition': 'getGraphDefinition',
      'PUT /orgs/{id}/members/{user_id}': 'setOrgMember',
      'GET /health': 'getHealth',
      'GET /openapi.json': 'getOpenApiDocument',
    });
    expect(
      Object.keys(doc.paths).filter((path) => path.startsWith('/agents/{') && !path.startsWith('/agents/{agent}')),
    ).toEqual([]);
    expect(doc.servers).toEqual([expect.objectContaining({ url: '/' })]);
    const tags = new Set(doc.tags.map((t) => t.name));
    expect(ops.every((op) => (op as { tags?: string[] }).tags!.every((t) => tags.has(t)))).toBe(true);
    expect(doc.tags.every((t) => t.description.length > 10)).toBe(true);
  });

  it('is linked from the portal, with the command that generates a typed client', async () => {
    const portal = await (await ctx.server.request('/')).text();
    expect(portal).toContain('href="/openapi.json"');
    expect(portal).toContain('npx openapi-typescript "$BASE/openapi.json" -o api.d.ts');
  });

  it('gives the API its own version, in the document and on every API answer', async () => {
    const doc = await loadDocument();
    expect(doc.info.version).toBe(API_VERSION);
    expect(API_VERSION).toMatch(/^\d+\.\d+\.\d+$/);
    expect((await ctx.server.request('/health')).headers.get('api-version')).toBe(API_VERSION);
    expect((await ctx.server.request('/threads/not-a-uuid')).headers.get('api-version')).toBe(API_VERSION);
  });

  it('has one RunEvent, whose members each require their own `type`, that every stream refers to', async () => {
    const doc = await loadDocument();
    const runEvent = doc.components.schemas.RunEvent as { oneOf: { $ref: string }[]; discriminator?: unknown };
    expect(runEvent.oneOf.length).toBeGreaterThan(10);
    // No discriminator: Ajv refuses its mapping, and without one generators read schema names as its values.
    expect(runEvent.discriminator).toBeUndefined();
    const members = runEvent.oneOf.map((ref) => {
      const name = ref.$ref.split('/').at(-1)!;
      const schema = doc.components.schemas[name] as {
        required: string[];
        properties: { type: { enum: string[] } };
      };
      expect(schema.required, name).toContain('type');
      expect(schema.properties.type.enum, name).toHaveLength(1);
      return [schema.properties.type.enum[0]!, name];
    });
    expect(Object.fromEntries(members)).toMatchObject({
      run_start: 'RunStartEvent',
      gate_waiting: 'GateWaitingEvent',
      gate_approved: 'GateApprovedEvent',
    });
    expect(new Set(members.map(([type]) => type)).size).toBe(members.length);
    const streamsOf = (langgraph: boolean) =>
      operations(doc)
        .filter((op) => op.path.startsWith('/lg/') === langgraph)
        .flatMap((op) =>
          Object.values(op.responses).flatMap((r) =>
            r.content?.['text/event-stream'] ? [r.content['text/event-stream']] : [],
          ),
        );
    expect(streamsOf(false).length).toBeGreaterThanOrEqual(2);
    for (const stream of streamsOf(false)) expect(stream.schema).toEqual({ $ref: '#/components/schemas/RunEvent' });
    // The LangGraph API's streams speak LangGraph's protocol, whose `custom` events carry these RunEvents.
    expect(streamsOf(true).length).toBe(2);
    for (const stream of streamsOf(true)) expect(stream.schema).toEqual({ $ref: '#/components/schemas/LgStreamEvent' });
  });

  it('declares on each operation exactly the errors it can answer, each with the error envelope', async () => {
    const doc = await loadDocument();
    const ops = Object.fromEntries(operations(doc).map((op) => [op.key, op]));
    // Every operation may answer 429 when the server limits requests (per token, or per address on a door without one).
    expect(statuses(ops['GET /health']!)).toEqual([200, 403, 429, 503]);
    // project_id narrows the list to a project's offer: a malformed one is 400, another tenant's 404.
    expect(statuses(ops['GET /agents']!)).toEqual([200, 400, 401, 403, 404, 429, 503]);
    expect(statuses(ops['GET /auth/login']!)).toEqual([302, 400, 403, 404, 429]);
    expect(statuses(ops['POST /graphs/{agent}/run']!)).toEqual([200, 400, 401, 403, 404, 409, 413, 415, 422, 429, 503]);
    expect(statuses(ops['POST /threads/{id}/gates/{gate}/approve']!)).toEqual([
      202, 400, 401, 403, 404, 409, 413, 415, 422, 429, 503,
    ]);
    expect(statuses(ops['DELETE /orgs/{id}']!)).toEqual([204, 400, 401, 403, 404, 409, 429, 503]);
    // The local runtime's limit per person and the request limit are both said on a run's 429.
    expect(ops['POST /graphs/{agent}/run']!.responses['429']!.description).toMatch(
      /local runtime.*; or more requests a minute/,
    );
    const envelope = { $ref: '#/components/schemas/Error' };
    for (const op of Object.values(ops)) {
      // Anything else (an unexpected 500) is the envelope too.
      expect(op.responses.default?.content?.['application/json']?.schema, `${op.key} default`).toEqual(envelope);
      for (const [status, response] of Object.entries(op.responses)) {
        if (status === 'default' || Number(status) < 400 || (op.key === 'GET /health' && status === '503')) continue;
        expect(response.content?.['application/json']?.schema, `${op.key} ${status}`).toEqual(envelope);
        if (op.requestBody) expect(statuses(op), op.key).toEqual(expect.arrayContaining([413, 415]));
      }
    }
    const code = doc.components.schemas.ErrorCode as { enum: string[] };
    expect(code.enum).toEqual([...ERROR_CODES]);
  });
  it('says in its schemas what the server refuses by rule: NUL in text, a webhook without http(s), two scopes', async () => {
    const doc = await loadDocument();
    const ajv = new Ajv2020({ strict: false });
    addFormats(ajv);
    ajv.addSchema({ ...doc, $id: 'https://document.test/openapi.json' });
    const valid = (name: string, value: unknown) =>
      ajv.getSchema(`https://document.test/openapi.json#/components/schemas/${name}`)!(value);
    expect(valid('RunRequest', { message: 'hello' })).toBe(true);
    expect(valid('RunRequest', { message: 'hello\u0000world' })).toBe(false);
    expect(valid('ReasonBody', { reason: 'stale\u0000' })).toBe(false);
    expect(valid('NodeConfig', { notes: 'see\u0000this' })).toBe(false);
    const webhook = { url: 'https://hooks.example/in', events: ['run.failed'] };
    expect(valid('CreateWebhook', { ...webhook, project_id: DEFAULT_PROJECT_ID })).toBe(true);
    expect(valid('CreateWebhook', { ...webhook, url: 'ftp://hooks.example/in', project_id: DEFAULT_PROJECT_ID })).toBe(
      false,
    );
    expect(valid('CreateWebhook', webhook)).toBe(false);
    expect(valid('CreateWebhook', { ...webhook, project_id: DEFAULT_PROJECT_ID, org_id: DEFAULT_PROJECT_ID })).toBe(
      false,
    );
    expect(
      valid('CreateWebhook', { ...webhook, events: ['run.failed', 'run.failed'], project_id: DEFAULT_PROJECT_ID }),
    ).toBe(false);
  });
});

describe('the server takes what the document says', () => {
  const auth = { authorization: `Bearer ${TOKEN}` };

  it('takes the id /auth/me hands the API-token administrator wherever a user id is expected', async () => {
    const me = (await (await ctx.server.request('/auth/me', { headers: auth })).json()) as { user: { id: string } };
    const res = await ctx.server.request(`/projects/${DEFAULT_PROJECT_ID}/members/${me.user.id}`, {
      method: 'PUT',
      headers: auth,
      json: { role: 'viewer' },
    });
    // Not "must be a UUID", nor "user … not found": the id is a user's, as /auth/me says.
    expect(res.status).toBe(200);
    expect(await res.json()).toContainEqual({ user_id: me.user.id, name: 'api-token', email: null, role: 'viewer' });
    const removed = await ctx.server.request(`/projects/${DEFAULT_PROJECT_ID}/members/${me.user.id}`, {
      method: 'DELETE',
      headers: auth,
    });
    expect(removed.status).toBe(204);
  });

  it('gives organisations, teams and projects request schemas of their own, and holds to them', async () => {
    const doc = await loadDocument();
    const bodyOf = (path: string) =>
      (doc.paths[path]!.post!.requestBody as { content: Record<string, { schema: { $ref: string } }> }).content[
        'application/json'
      ]!.schema.$ref.split('/').at(-1)!;
    expect([bodyOf('/orgs'), bodyOf('/teams'), bodyOf('/projects')]).toEqual([
      'CreateOrg',
      'CreateTeam',
      'CreateProject',
    ]);
    expect(doc.components.schemas.CreateOrg!.required).toEqual(['name']);
    expect(doc.components.schemas.CreateTeam!.required).toEqual(['name', 'parent_id']);
    expect(doc.components.schemas.CreateProject!.required).toEqual(['name', 'parent_id']);

    const team = await ctx.server.request('/teams', { method: 'POST', headers: auth, json: { name: 'No parent' } });
    expect(team.status).toBe(400);
    expect((await team.json()).error.details.fields).toEqual([expect.objectContaining({ field: 'parent_id' })]);
    const org = await ctx.server.request('/orgs', { method: 'POST', headers: auth, json: { name: 'Acme' } });
    expect(org.status).toBe(201);
    const orgId = (await org.json()).id as string;
    const made = await ctx.server.request('/teams', {
      method: 'POST',
      headers: auth,
      json: { name: 'Platform', parent_id: orgId },
    });
    expect(made.status).toBe(201);
    expect(await made.json()).toMatchObject({ name: 'Platform', parent_id: orgId });
  });
});
