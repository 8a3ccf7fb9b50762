import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import { type z } from 'zod';
import type { Authenticator } from '../auth/authenticator';
import { PUBLIC_VISITOR, type RequestContext } from '../auth/principal';
import { ErrorBodySchema } from '../contracts/common';
import { badRequest, unsupportedMediaType } from '../contracts/errors';
import { jsonBodyParser } from './errors';

/**
 * The API's own semantic version, apart from the package's: it changes with the contract (paths, operations,
 * schemas, error codes), not with each release. Sent as the `API-Version` header of every API answer and written
 * in the document's info.version. docs/http-api.md#versioning says what each part means.
 */
export const API_VERSION = '1.2.0';

/**
 * Sends API_VERSION on every answer of the server, not only the routes': a guard that answers before any route (a
 * path that does not decode, a Host that is not loopback) answers for an API path too.
 */
export const apiVersionHeader: RequestHandler = (_req, res, next) => {
  res.setHeader('API-Version', API_VERSION);
  next();
};

type Method = 'get' | 'post' | 'put' | 'delete';
type AnyObject = z.ZodType<Record<string, unknown>>;

interface ResponseSpec {
  description: string;
  schema?: z.ZodType;
  /** Defaults to application/json; SSE routes say text/event-stream. */
  contentType?: string;
  /**
   * More media types of the same answer, chosen by the request's Accept header. The document lists
   * application/json first: a generator that takes the first media type then makes a plain call, never an SSE
   * client that sends the request again on an error or a cut.
   */
  alternatives?: Record<string, z.ZodType>;
  /** Response headers worth declaring (an event stream's Cache-Control, X-Accel-Buffering, …). */
  headers?: Record<string, { description: string; schema: { type: 'string'; example?: string } }>;
}

export interface RouteSpec<P extends AnyObject, Q extends AnyObject, B extends z.ZodType> {
  method: Method;
  /** OpenAPI form, `/threads/{id}`; Express's `:id` form is derived from it. */
  path: string;
  /** A stable verb a script author would type (`runAgent`, `approveGate`); generated clients name functions by it. */
  operationId: string;
  summary: string;
  tag: string;
  /** Public routes answer without a token even when authentication is on. */
  public?: boolean;
  /**
   * The path parameter naming a run whose stream token (`?access_token=`, see Authenticator.issueStreamToken) is
   * accepted here instead of an Authorization header: for a browser's EventSource, which cannot send one.
   */
  streamTokenFor?: string;
  /** Request headers the route reads, for the document (the handler reads them itself). */
  headers?: AnyObject;
  /**
   * Errors this route answers beyond those its declaration implies (see `errorStatuses`): a role check's 403, the
   * 404 of something named in the query or body, 409, 429. Each is declared with the error envelope.
   */
  errors?: Partial<Record<ErrorStatus, string>>;
  /** Its errors are a page for a browser (Accept: text/html), the envelope for any other client. */
  pageErrors?: boolean;
  params?: P;
  query?: Q;
  body?: B;
  responses: Record<number, ResponseSpec>;
  handler: (input: {
    params: z.infer<P>;
    query: z.infer<Q>;
    body: z.infer<B>;
    ctx: RequestContext;
    req: Request;
    res: Response;
  }) => unknown;
}

type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 413 | 415 | 429 | 503;

const implied: Partial<Record<ErrorStatus, string>> = {
  400: 'invalid request: a path parameter, query parameter or body field is wrong (invalid_request), or the body is not JSON (malformed_json)',
  401: 'missing or invalid token (unauthorized)',
  404: 'not found (not_found)',
  413: 'the body is larger than BODY_LIMIT (payload_too_large)',
  415: 'the body is not application/json (unsupported_media_type), or its encoding or charset is not supported',
  503: 'the database is unreachable (database_unavailable): try again after Retry-After',
};

/**
 * The errors a route can answer: 400 where there is input to validate, 401 unless it is public, 404 where a path
 * names an object, 413 and 415 where it takes a body, 503 unless it is public (a session's token is checked against
 * the database); then the route's own.
 */
export function errorStatuses(spec: RouteSpec<AnyObject, AnyObject, z.ZodType>): Map<number, string> {
  const statuses = new Map<number, string>();
  const add = (status: ErrorStatus, when: unknown) => when && statuses.set(status, implied[status]!);
  add(400, spec.params || spec.query || spec.body);
  add(401, !spec.public);
  add(404, spec.params);
  add(413, spec.body);
  add(415, spec.body);
  add(503, !spec.public);
  for (const [status, description] of Object.entries(spec.errors ?? {})) statuses.set(Number(status), description);
  return new Map([...statuses].sort(([a], [b]) => a - b));
}

/** Tags in the order the document lists them, each with what its operations are about. */
const TAGS = [
  { name: 'runs', description: 'Start runs, follow their event streams, cancel them' },
  { name: 'threads', description: 'Conversations: each holds the runs of one agent or command' },
  {
    name: 'approvals',
    description: 'Decide approval gates (approve, edit, respond, reject), the record of decisions, and the inbox',
  },
  { name: 'assets', description: 'The agents and commands loaded, their graphs, and the saved node configuration' },
  { name: 'models', description: 'Models by provider and the queue of the local runtime' },
  { name: 'tenancy', description: 'Organisations, teams and projects, and their members' },
  {
    name: 'webhooks',
    description: "URLs told of a project's or an organisation's gates and finished runs, and how each delivery went",
  },
  { name: 'auth', description: 'Sign-in with the identity provider, and who the caller is' },
  { name: 'service', description: "The service's own health" },
];

const VERSION_HEADER = {
  'API-Version': {
    description: 'The API version that answered (semantic versioning; see info.version)',
    schema: { type: 'string' as const, example: API_VERSION },
  },
};

/** Where a value holds a NUL (U+0000): no field of the API needs one, and PostgreSQL's text cannot store it. */
function nulFields(value: unknown, path: string[] = []): string[] {
  if (typeof value === 'string') return value.includes('\u0000') ? [path.join('.')] : [];
  if (Array.isArray(value)) return value.flatMap((item, i) => nulFields(item, [...path, String(i)]));
  if (value && typeof value === 'object') {
    return Object.entries(value).flatMap(([key, item]) => nulFields(item, [...path, key]));
  }
  return [];
}

/**
 * Where a JSON body has a key `__proto__`: zod drops such keys without a word (they would set a prototype), so an
 * edit keyed so would pass as no edit at all. No field of the API is named so: refused, not ignored.
 */
function prototypeKeys(value: unknown, path: string[] = []): string[] {
  if (Array.isArray(value)) return value.flatMap((item, i) => prototypeKeys(item, [...path, String(i)]));
  if (!value || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, item]) =>
    key === '__proto__' ? [[...path, key].join('.')] : prototypeKeys(item, [...path, key]),
  );
}

/** `details.fields` lets a form show each problem at its field; `message` says it all in one line. */
function parse<T extends z.ZodType>(schema: T | undefined, value: unknown, where: string): z.infer<T> {
  if (!schema) return {} as z.infer<T>;
  const reserved = prototypeKeys(value);
  if (reserved.length) {
    const fields = reserved.map((field) => ({ field, message: 'no field is named __proto__' }));
    throw badRequest(`invalid ${where}: ${fields.map((f) => `${f.field}: ${f.message}`).join('; ')}`, { fields });
  }
  const result = schema.safeParse(value);
  const fields = result.success
    ? nulFields(result.data).map((field) => ({ field, message: 'must not contain NUL characters' }))
    : result.error.issues.map((i) => ({ field: i.path.join('.'), message: i.message }));
  if (result.success && fields.length === 0) return result.data;
  const parts = fields.map((f) => (f.field ? `${f.field}: ${f.message}` : f.message));
  throw badRequest(`invalid ${where}: ${parts.join('; ')}`, { fields });
}

/**
 * One place where a route is declared: its validation, its access and its OpenAPI entry come from
 * the same zod schemas, so the docs cannot drift from what the server accepts.
 */
export class Api {
  readonly registry = new OpenAPIRegistry();
  readonly router: Router = express.Router();

  private readonly parseBody: ReturnType<typeof jsonBodyParser>;

  /** `bodyLimit`: the largest JSON body a route that takes one reads (BODY_LIMIT). */
  constructor(
    private readonly auth: Authenticator,
    bodyLimit = '1mb',
  ) {
    this.registry.registerComponent('securitySchemes', 'bearer', { type: 'http', scheme: 'bearer' });
    this.registry.registerComponent('securitySchemes', 'streamToken', {
      type: 'apiKey',
      in: 'query',
      name: 'access_token',
      description:
        "A stream token from POST /runs/{id}/stream-token: follows that one run's stream, for the user it was issued to, " +
        'for a few minutes; for a browser EventSource, which cannot send an Authorization header.',
    });
    this.parseBody = jsonBodyParser(bodyLimit);
  }

  route<P extends AnyObject, Q extends AnyObject, B extends z.ZodType = z.ZodUndefined>(
    spec: RouteSpec<P, Q, B>,
  ): void {
    const responses: Record<string, object> = {};
    for (const [status, r] of Object.entries(spec.responses)) {
      const headers = { ...VERSION_HEADER, ...r.headers };
      responses[status] = r.schema
        ? {
            description: r.description,
            headers,
            content: Object.fromEntries(
              [[r.contentType ?? 'application/json', r.schema] as const, ...Object.entries(r.alternatives ?? {})]
                .sort(([a], [b]) => Number(b === 'application/json') - Number(a === 'application/json'))
                .map(([type, schema]) => [type, { schema }]),
            ),
          }
        : { description: r.description, headers };
    }
    const errorContent = {
      'application/json': { schema: ErrorBodySchema },
      ...(spec.pageErrors ? { 'text/html': { schema: { type: 'string' as const } } } : {}),
    };
    for (const [status, description] of errorStatuses(spec as never)) {
      responses[status] ??= { description, headers: VERSION_HEADER, content: errorContent };
    }
    this.registry.registerPath({
      method: spec.method,
      path: spec.path,
      operationId: spec.operationId,
      summary: spec.summary,
      tags: [spec.tag],
      security: spec.public ? [] : [{ bearer: [] }, ...(spec.streamTokenFor ? [{ streamToken: [] }] : [])],
      request: {
        ...(spec.headers ? { headers: spec.headers as never } : {}),
        ...(spec.params ? { params: spec.params as never } : {}),
        ...(spec.query ? { query: spec.query as never } : {}),
        ...(spec.body ? { body: { required: true, content: { 'application/json': { schema: spec.body } } } } : {}),
      },
      responses,
    });

    const expressPath = spec.path.replace(/\{(\w+)\}/g, ':$1');
    // Only a route that takes a body reads one: another ignores whatever a client sends along.
    const bodyParsers = spec.body ? [this.parseBody] : [];
    this.router[spec.method](expressPath, ...bodyParsers, async (req, res) => {
      const streamOf = spec.streamTokenFor ? String(req.params[spec.streamTokenFor]) : undefined;
      const principal = spec.public
        ? await this.auth.authenticate(req).catch(() => PUBLIC_VISITOR)
        : await this.auth.authenticate(req, streamOf ? { streamOf } : undefined);
      // express.json() leaves a body of another media type unread; say so rather than "expected object".
      if (spec.body && req.is('application/json') === false) {
        throw unsupportedMediaType('request body must be application/json');
      }
      const params = parse(spec.params, req.params, 'path parameters');
      const query = parse(spec.query, req.query, 'query parameters');
      const body = parse(spec.body, req.body, 'request body');
      const result = await spec.handler({ params, query, body, ctx: { principal }, req, res });
      if (res.headersSent || res.writableEnded) return;
      if (result === undefined) res.status(204).end();
      else if (res.statusCode !== 200) res.json(result);
      else
        res
          .status(
            Object.keys(spec.responses)
              .map(Number)
              .find((s) => s >= 200 && s < 300) ?? 200,
          )
          .json(result);
    });
  }

  /**
   * A public page served beside the API (the portal, the docs, this document): declared in the document so that a
   * client finds it by its operationId, served by its own router (docs.router.ts, portal.router.ts).
   */
  page(spec: { path: string; operationId: string; summary: string; description: string; contentType: string }): void {
    this.registry.registerPath({
      method: 'get',
      path: spec.path,
      operationId: spec.operationId,
      summary: spec.summary,
      tags: ['service'],
      security: [],
      responses: {
        200: {
          description: spec.description,
          content: {
            [spec.contentType]: {
              schema: spec.contentType === 'application/json' ? { type: 'object' } : { type: 'string' },
            },
          },
        },
      },
    });
  }

  /** `serviceVersion`: the package's version, which is not the API's (see API_VERSION). */
  openApiDocument(info: { serviceVersion: string }): object {
    return new OpenApiGeneratorV31(this.registry.definitions).generateDocument({
      openapi: '3.1.0',
      info: {
        title: 'Agent workflow service',
        version: API_VERSION,
        description:
          'Runs agents and commands as LangGraph graphs, streams their output as server-sent events, and stops at approval gates until a person decides.\n\n' +
          `info.version is the version of this API (semantic versioning), sent as the API-Version header of every answer; the service itself is ${info.serviceVersion}. ` +
          'Each operation declares every error it can answer, with the error envelope; an error `code` is one of the `Error` schema. ' +
          'A typed client can be generated from this document, e.g. `npx openapi-typescript http://127.0.0.1:8000/openapi.json -o api.d.ts`.',
        // The package is private (UNLICENSED): no public licence is granted.
        license: { name: 'Proprietary' },
      },
      servers: [{ url: '/', description: 'the server that serves this document' }],
      tags: TAGS,
    });
  }
}
