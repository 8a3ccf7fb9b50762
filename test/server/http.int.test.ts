import fs from 'node:fs/promises';
import path from 'node:path';
import SwaggerParser from '@apidevtools/swagger-parser';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { LATEST_MIGRATION } from '../../src-server/db/migrations';
import { API_VERSION } from '../../src-server/http/api';
import { useIntegrationServer } from '../helpers/integration';

// The fixture catalog (one agent, one command: test/helpers/fixture-assets.ts), so that /health has known counts.
const ctx = useIntegrationServer({
  model: false,
  server: { AUTH_ENABLED: 'true', SVC_API_TOKEN: 'test-token-0123456789', BODY_LIMIT: '2kb' },
});

describe('the HTTP surface', () => {
  it('reports database status and asset counts on /health, without a token', async () => {
    const res = await fetch(`${ctx.server.url}/health`);
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toMatchObject({ status: 'ok', database: { ok: true }, auth: { enabled: true } });
    expect(body.schema_version).toBe(LATEST_MIGRATION);
    expect(body).toMatchObject({ agents: 1, commands: 1 });
  });

  it('answers /health 503 with Retry-After while its database refuses connections, as the document declares', async () => {
    const doc = await (await fetch(`${ctx.server.url}/openapi.json`)).json();
    const declared = doc.paths['/health'].get.responses['503'];
    expect(Object.keys(declared.headers)).toContain('Retry-After');

    // The database stops taking connections, and those the server holds are ended: as when PostgreSQL goes away.
    const admin = new pg.Client({ connectionString: inject('databaseUrl') });
    await admin.connect();
    const name = new URL(ctx.db.url).pathname.slice(1);
    try {
      await admin.query(`ALTER DATABASE ${name} WITH ALLOW_CONNECTIONS false`);
      await admin.query(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
        [name],
      );
      const down = await fetch(`${ctx.server.url}/health`);
      expect(down.status).toBe(503);
      expect(down.headers.get('retry-after')).toBe('5');
      expect(await down.json()).toMatchObject({ status: 'degraded', database: { ok: false }, schema_version: null });
    } finally {
      await admin.query(`ALTER DATABASE ${name} WITH ALLOW_CONNECTIONS true`);
      await admin.end();
    }
    await expect.poll(async () => (await fetch(`${ctx.server.url}/health`)).status).toBe(200);
  });

  it('answers an unknown route with a 404 envelope and logs it on svc.api', async () => {
    const res = await ctx.server.request('/no/such/route');
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: { code: 'not_found', message: 'no route for GET /no/such/route' } });
    expect(ctx.server.logs.some((l) => / INFO svc\.api 404 GET \/no\/such\/route/.test(l))).toBe(true);
  });

  it('rejects malformed JSON with a 400 envelope', async () => {
    const res = await ctx.server.request('/queue/reset', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"reason": ',
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: { code: 'malformed_json', message: 'request body is not valid JSON' } });
  });

  it('answers a body that does not decode as its Content-Encoding says with 400 and the envelope', async () => {
    for (const encoding of ['gzip', 'deflate', 'br']) {
      const res = await ctx.server.request('/queue/reset', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-encoding': encoding },
        body: '{"reason": "plain JSON under a compressed label"}',
      });
      expect(res.status, encoding).toBe(400);
      expect(await res.json()).toEqual({
        error: { code: 'malformed_encoding', message: 'request body does not decode as its Content-Encoding says' },
      });
    }
    expect(ctx.server.logs.filter((l) => l.includes(' ERROR '))).toEqual([]);
  });

  it('answers a missing studio asset with a 404 envelope, not a 500', async () => {
    const res = await fetch(`${ctx.server.url}/ui/assets/nope.js`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: { code: 'not_found', message: 'no studio file /ui/assets/nope.js' } });
    expect(ctx.server.logs.filter((l) => l.includes(' ERROR '))).toEqual([]);
  });

  it('rejects a body over the size limit with 413', async () => {
    const res = await ctx.server.request('/queue/reset', { method: 'POST', json: { reason: 'x'.repeat(5000) } });
    expect(res.status).toBe(413);
    const body = await res.json();
    expect(body.error.code).toBe('payload_too_large');
  });

  it('refuses a protected route without a token, with a wrong one, and with another scheme', async () => {
    const attempts: Record<string, string>[] = [
      {},
      { authorization: 'Bearer wrong-token' },
      { authorization: 'Basic abc' },
    ];
    for (const headers of attempts) {
      const res = await fetch(`${ctx.server.url}/agents`, { headers });
      expect(res.status).toBe(401);
      expect((await res.json()).error.code).toBe('unauthorized');
    }
    const ok = await ctx.server.request('/agents');
    expect(ok.status).toBe(200);
  });

  it('never puts a stack trace in a response', async () => {
    const res = await ctx.server.request('/threads/not-a-uuid');
    const text = await res.text();
    expect(text).not.toMatch(/\n\s+at /);
    expect(() => JSON.parse(text)).not.toThrow();
  });

  it('serves an OpenAPI 3.1 document that validates, and the docs page', async () => {
    const res = await fetch(`${ctx.server.url}/openapi.json`);
    expect(res.status).toBe(200);
    const doc = await res.json();
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.paths['/health'].get).toBeDefined();
    const result = await new Validator().validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);

    const docs = await fetch(`${ctx.server.url}/docs`);
    expect(docs.status).toBe(200);
    expect(await docs.text()).toContain('/openapi.json');
    const bundle = await fetch(`${ctx.server.url}/docs/assets/swagger-ui-bundle.js`);
    expect(bundle.status).toBe(200);
  });

  it("passes swagger-parser's validation", async () => {
    const doc = await (await fetch(`${ctx.server.url}/openapi.json`)).json();
    await expect(SwaggerParser.validate(doc)).resolves.toMatchObject({ openapi: '3.1.0' });
  });

  it('has schemas that Ajv compiles in strict mode, with its discriminator option on', async () => {
    const doc = (await (await fetch(`${ctx.server.url}/openapi.json`)).json()) as {
      components: { schemas: Record<string, unknown> };
      paths: Record<string, Record<string, unknown>>;
    };
    const ajv = new Ajv2020({ strict: true, discriminator: true });
    addFormats(ajv);
    // The document's own keywords around the schemas, which are not JSON Schema's.
    ajv.addVocabulary(['openapi', 'info', 'servers', 'paths', 'webhooks', 'components', 'tags', 'security']);
    const id = 'https://agent-workflow.test/openapi.json';
    ajv.addSchema({ ...doc, $id: id });
    const pointers = Object.keys(doc.components.schemas).map((name) => `#/components/schemas/${name}`);
    // Every schema inline in an operation: parameters, request bodies, responses.
    const escape = (part: string) => part.replace(/~/g, '~0').replace(/\//g, '~1');
    const walk = (node: unknown, pointer: string): void => {
      if (!node || typeof node !== 'object') return;
      for (const [key, value] of Object.entries(node)) {
        if (key === 'schema') pointers.push(`${pointer}/schema`);
        else walk(value, `${pointer}/${escape(key)}`);
      }
    };
    walk(doc.paths, '#/paths');
    expect(pointers.length).toBeGreaterThan(200);
    const failures = pointers.flatMap((pointer) => {
      try {
        return ajv.getSchema(`${id}${pointer}`) ? [] : [`${pointer}: not found`];
      } catch (error) {
        return [`${pointer}: ${(error as Error).message}`];
      }
    });
    expect(failures).toEqual([]);
  });

  it("is linted with all of Redocly's recommended rules: redocly.yaml turns none off", async () => {
    const config = parseYaml(await fs.readFile(path.resolve(import.meta.dirname, '../../redocly.yaml'), 'utf8')) as {
      extends: string[];
      rules?: Record<string, unknown>;
    };
    expect(config.extends).toEqual(['recommended-strict']);
    expect(Object.entries(config.rules ?? {}).filter(([, level]) => level === 'off')).toEqual([]);
  });

  it('sends API-Version on the pages and the document too, as it declares', async () => {
    for (const page of ['/', '/docs', '/openapi.json']) {
      expect((await fetch(`${ctx.server.url}${page}`)).headers.get('api-version'), page).toBe(API_VERSION);
    }
  });
});
