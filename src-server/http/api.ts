import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import { type z } from 'zod';
import type { Authenticator } from '../auth/authenticator';
import { PUBLIC_VISITOR, type RequestContext } from '../auth/principal';
import { withRequestOrigin } from '../auth/request-origin';
import { ErrorBodySchema } from '../contracts/common';
import { badRequest, unsupportedMediaType } from '../contracts/errors';
import type { IdempotencyService } from '../services/idempotency.service';
import { bodyProblems } from './body-problems';
import { jsonBodyParser } from './errors';
import { answerOnce, IDEMPOTENCY_HEADER, IdempotencyKeyHeader, REPLAYED_HEADER } from './idempotency';
import { wantsJson } from './run-stream';

/**
 * The API's own semantic version, apart from the package's: it changes with the contract (paths, operations,
 * schemas, error codes), not with each release. Sent as the `API-Version` header of every API answer and written
 * in the document's info.version. docs/http-api.md#versioning says what each part means.
 */
export const API_VERSION = '1.19.0';

/**
 * Sends API_VERSION on every answer of the server, not only the routes': a guard that answers before any route (a
 * path that does not decode, a Host that is not loopback) answers for an API path too.
 */
export const apiVersionHeader: RequestHandler = (_req, res, next) => {
  res.setHeader('API-Version', API_VERSION);
  next();
};

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
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
  headers?: Record<string, HeaderSpec>;
}

interface HeaderSpec {
  description: string;
  schema: { type: 'string'; examples?: string[] };
}

export interface RouteSpec<P extends AnyObject, Q extends AnyObject, B extends z.ZodType, R = unknown> {
  method: Method;
  /** OpenAPI form, `/threads/{id}`; Express's `:id` form is derived from it. */
  path: string;
  /** A stable verb a script author would type (`runAgent`, `approveGate`); generated clients name functions by it. */
  operationId: string;
  summary: string;
  /** More than the summary says, where a client needs it: generated clients show it beside the function. */
  description?: string;
  tag: string;
  /** Public routes answer without a token even when authentication is on. */
  public?: boolean;
  /**
   * The route takes a bearer token of its own, which its handler checks, instead of a caller's (GET /metrics and
   * METRICS_TOKEN): the request is not authenticated as a caller of the API, whatever it sends, and the document names
   * this security scheme for it.
   */
  ownToken?: { scheme: string; description: string };
  /**
   * The path parameter naming a run whose stream token (`?access_token=`, see Authenticator.issueStreamToken) is
   * accepted here instead of an Authorization header: for a browser's EventSource, which cannot send one.
   */
  streamTokenFor?: string;
  /** Request headers the route reads, for the document (the handler reads them itself). */
  headers?: z.ZodObject;
  /**
   * The route takes an `Idempotency-Key` (http/idempotency.ts): a retry with the same key and request answers the
   * first answer again instead of acting twice. For decisions, cancels and run starts.
   */
  idempotent?: boolean;
  /**
   * The answer is also offered as an event stream: unless the request asks for JSON, the handler's JSON answer (a
   * run's RunAccepted) is followed by this instead of being sent. A retry under the same Idempotency-Key comes here
   * with the first answer, so it follows the same run.
   */
  streamAnswer?: (answer: Awaited<R>, input: { ctx: RequestContext; res: Response }) => Promise<void>;
  /**
   * Errors this route answers beyond those its declaration implies (see `errorStatuses`): a role check's 403, the
   * 404 of something named in the query or body, 409, 429. Each is declared with the error envelope.
   */
  errors?: Partial<Record<ErrorStatus, string>>;
  /** Its errors are a page for a browser (Accept: text/html), the envelope for any other client. */
  pageErrors?: boolean;
  /**
   * The body is `application/x-www-form-urlencoded`, as Slack and HTML forms post it: `body` is its fields, checked by
   * the schema, and `rawBody` its bytes as they came (what a signature is computed over).
   */
  form?: boolean;
  /** The largest body this route reads, where it is not BODY_LIMIT (an imported thread: THREAD_IMPORT_LIMIT). */
  bodyLimit?: string;
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
    /** A form route's body as it came; undefined elsewhere. */
    rawBody?: Buffer;
  }) => R;
}

const FORM = 'application/x-www-form-urlencoded';

type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 413 | 415 | 422 | 429 | 503;

const HOST_GUARD = 'the server listens on a loopback address and the request named another host (forbidden_host)';

const implied: Partial<Record<ErrorStatus, string>> = {
  400: 'invalid request: a path parameter, query parameter, header or body field is wrong (invalid_request), or the body is not JSON (malformed_json)',
  401: 'missing or invalid token (unauthorized)',
  403: HOST_GUARD,
  404: 'not found (not_found)',
  409: 'the first request with this Idempotency-Key is still being answered (conflict)',
  413: 'the body is larger than BODY_LIMIT (payload_too_large)',
  415: 'the body is not application/json (unsupported_media_type), or its encoding or charset is not supported',
  422: 'the Idempotency-Key was used for another request, another path or body, in the last 24 hours (idempotency_key_reused)',
  429: 'more requests a minute with this token, or to this door from this address, than the server allows (too_many_requests): try again after Retry-After',
  503: 'the database is unreachable (database_unavailable): try again after Retry-After',
};

/**
 * The errors a route can answer: 400 where there is input to validate, 401 unless it is public, 403 from the Host
 * guard on any route, 404 where a path names an object, 409 and 422 where it takes an Idempotency-Key, 413 and 415
 * where it takes a body, 503 unless it is public or takes a token of its own (a session's token is checked against the
 * database); then the route's own, which say what else their status means.
 */
export function errorStatuses(spec: RouteSpec<AnyObject, AnyObject, z.ZodType>): Map<number, string> {
  const statuses = new Map<number, string>();
  const add = (status: ErrorStatus, when: unknown) => when && statuses.set(status, implied[status]!);
  add(400, spec.params || spec.query || spec.body || spec.idempotent);
  add(401, !spec.public);
  add(403, true);
  add(404, spec.params);
  add(409, spec.idempotent);
  add(413, spec.body);
  add(415, spec.body);
  add(422, spec.idempotent);
  // Any request with a token is counted against it, and the doors without one per address (rate-limits.ts), when the
  // server limits requests.
  add(429, true);
  // A token of the route's own is not looked up in the database.
  add(503, !spec.public && !spec.ownToken);
  for (const [status, description] of Object.entries(spec.errors ?? {})) {
    const alsoImplied = statuses.get(Number(status));
    // A route's own 403, 409 and 429 are other situations than the implied ones; its 400 and 404 say all of theirs.
    const both = alsoImplied && [403, 409, 429].includes(Number(status));
    statuses.set(Number(status), both ? `${description}; or ${alsoImplied}` : description);
  }
  return new Map([...statuses].sort(([a], [b]) => a - b));
}

/** Where a client is told when to come back. */
export const RETRY_AFTER: Record<string, HeaderSpec> = {
  'Retry-After': {
    description: 'seconds after which the request may be sent again',
    schema: { type: 'string', examples: ['5'] },
  },
};

const REPLAYED: Record<string, HeaderSpec> = {
  [REPLAYED_HEADER]: {
    description: `true when this answer repeats the first answer to the request's ${IDEMPOTENCY_HEADER}: the request was not acted on again`,
    schema: { type: 'string', examples: ['true'] },
  },
};

/** The envelope for anything an operation does not list: an unexpected failure is 500 internal_error. */
const otherAnswers = (content: object) => ({
  description: 'Any other status, such as an unexpected failure (500 internal_error): the error envelope',
  headers: VERSION_HEADER,
  content,
});

/**
 * A request without a body: none at all, or an empty one (`Content-Length: 0`, what Node's fetch and Python's
 * requests send for a POST without data), whatever its Content-Type.
 */
const bodyless = (req: Request) =>
  req.headers['transfer-encoding'] === undefined && Number(req.headers['content-length'] ?? 0) === 0;

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
    name: 'schedules',
    description:
      "Runs at the times of a cron expression, in a project, as the schedule's maker; and what each fire did",
  },
  {
    name: 'webhooks',
    description: "URLs told of a project's or an organisation's gates and finished runs, and how each delivery went",
  },
  {
    name: 'comparisons',
    description:
      "A run's input run again on another model or version of its agent, acting on nothing, and read beside it",
  },
  {
    name: 'datasets',
    description:
      "A project's datasets: items (an input, an expected output, checks) copied from runs or typed, and experiments " +
      'that run them on an agent version and a model, scored by checks',
  },
  {
    name: 'usage',
    description:
      "Model calls' tokens, cost and latency: the usage accounting, by run, phase, agent, model, project, user and day",
  },
  {
    name: 'budgets',
    description:
      "Daily or monthly limits on what an organisation's or a project's runs spend, in money and tokens, with their " +
      'current spend: a warning at their level, runs refused once spent',
  },
  {
    name: 'secrets',
    description:
      "Values a project's or organisation's MCP servers read by name (TRACKER_TOKEN): set by owners, never read back",
  },
  {
    name: 'audit',
    description: 'Who changed what and when: roles, tokens, configuration, credentials, budgets, agents; append-only',
  },
  { name: 'auth', description: 'Sign-in with the identity provider, and who the caller is' },
  {
    name: 'langgraph',
    description:
      'The LangGraph API under /lg, for LangChain\u2019s own clients (the LangGraph SDK, useStream, Agent Chat UI, Agent ' +
      'Inbox): agents and commands as assistants, threads, runs and their streams, interrupts at gates (docs/langgraph-api.md)',
  },
  {
    name: 'mcp',
    description:
      'The MCP server at /mcp (streamable HTTP, JSON-RPC; described by the MCP specification and its own tools/list, not ' +
      'here): how it takes a token',
  },
  { name: 'service', description: "The service's own health" },
];

const VERSION_HEADER = {
  'API-Version': {
    description: 'The API version that answered (semantic versioning; see info.version)',
    schema: { type: 'string' as const, examples: [API_VERSION] },
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

/** `details.fields` lets a form show each problem at its field; `message` says it all in one line. */
function parse<T extends z.ZodType>(schema: T | undefined, value: unknown, where: string): z.infer<T> {
  if (!schema) return {} as z.infer<T>;
  const refused = bodyProblems(value);
  if (refused.length) {
    const parts = refused.map((f) => (f.field ? `${f.field}: ${f.message}` : f.message));
    throw badRequest(`invalid ${where}: ${parts.join('; ')}`, { fields: refused });
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
  private readonly parseForm: RequestHandler;

  /**
   * `bodyLimit`: the largest JSON body a route that takes one reads (BODY_LIMIT). `idempotencyKeys`: where the
   * answers to Idempotency-Keys are kept; read by the handlers only, so a document can be built without it.
   */
  constructor(
    private readonly auth: Authenticator,
    bodyLimit = '1mb',
    private readonly idempotencyKeys?: IdempotencyService,
  ) {
    this.registry.registerComponent('securitySchemes', 'bearer', { type: 'http', scheme: 'bearer' });
    this.parseBody = jsonBodyParser(bodyLimit);
    this.parseForm = express.raw({ type: FORM, limit: bodyLimit });
  }

  route<P extends AnyObject, Q extends AnyObject, B extends z.ZodType = z.ZodUndefined, R = unknown>(
    spec: RouteSpec<P, Q, B, R>,
  ): void {
    if (spec.ownToken) {
      const { scheme, description } = spec.ownToken;
      this.registry.registerComponent('securitySchemes', scheme, { type: 'http', scheme: 'bearer', description });
    }
    const responses: Record<string, object> = {};
    for (const [status, r] of Object.entries(spec.responses)) {
      const success = Number(status) < 300;
      const headers = { ...VERSION_HEADER, ...(spec.idempotent && success ? REPLAYED : {}), ...r.headers };
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
      const headers = { ...VERSION_HEADER, ...(status === 429 || status === 503 ? RETRY_AFTER : {}) };
      responses[status] ??= { description, headers, content: errorContent };
    }
    responses.default = otherAnswers(errorContent);
    // A body every field of which may be left out may be left out whole (the schema takes undefined).
    const bodyOptional = spec.body ? spec.body.safeParse(undefined).success : false;
    const headers = spec.idempotent
      ? (spec.headers ?? IdempotencyKeyHeader).extend(IdempotencyKeyHeader.shape)
      : spec.headers;
    this.registry.registerPath({
      method: spec.method,
      path: spec.path,
      operationId: spec.operationId,
      summary: spec.summary,
      ...(spec.description ? { description: spec.description } : {}),
      tags: [spec.tag],
      security: spec.ownToken ? [{ [spec.ownToken.scheme]: [] }] : spec.public ? [] : [{ bearer: [] }],
      request: {
        ...(headers ? { headers: headers as never } : {}),
        ...(spec.params ? { params: spec.params as never } : {}),
        ...(spec.query ? { query: spec.query as never } : {}),
        ...(spec.body
          ? {
              body: {
                required: !bodyOptional,
                content: { [spec.form ? FORM : 'application/json']: { schema: spec.body } },
              },
            }
          : {}),
      },
      responses,
    });

    const expressPath = spec.path.replace(/\{(\w+)\}/g, ':$1');
    // Only a route that takes a body reads one: another ignores whatever a client sends along.
    const jsonParser = spec.bodyLimit ? jsonBodyParser(spec.bodyLimit) : this.parseBody;
    const bodyParsers = spec.body ? [spec.form ? this.parseForm : jsonParser] : [];
    const successStatus =
      Object.keys(spec.responses)
        .map(Number)
        .find((s) => s >= 200 && s < 300) ?? 200;
    this.router[spec.method](expressPath, ...bodyParsers, async (req, res) => {
      const streamOf = spec.streamTokenFor ? String(req.params[spec.streamTokenFor]) : undefined;
      const principal = spec.ownToken
        ? PUBLIC_VISITOR
        : spec.public
          ? await this.auth.authenticate(req).catch(() => PUBLIC_VISITOR)
          : await this.auth.authenticate(req, streamOf ? { streamOf } : undefined);
      // No body at all is not a body of another media type: the schema says whether it may be left out (400 if not).
      const noBody = spec.body && bodyless(req);
      // express.json() leaves a body of another media type unread; say so rather than "expected object".
      const mediaType = spec.form ? FORM : 'application/json';
      if (spec.body && !noBody && req.is(mediaType) === false) {
        throw unsupportedMediaType(`request body must be ${mediaType}`);
      }
      const rawBody = spec.form && Buffer.isBuffer(req.body) ? req.body : undefined;
      const given = rawBody ? Object.fromEntries(new URLSearchParams(rawBody.toString('utf8'))) : req.body;
      const key = spec.idempotent
        ? parse(IdempotencyKeyHeader, { [IDEMPOTENCY_HEADER]: req.get(IDEMPOTENCY_HEADER) }, 'request headers')[
            IDEMPOTENCY_HEADER
          ]
        : undefined;
      const params = parse(spec.params, req.params, 'path parameters');
      const query = parse(spec.query, req.query, 'query parameters');
      const body = parse(spec.body, noBody ? undefined : given, 'request body');
      const ctx = { principal };
      const act = async () => {
        const result = await withRequestOrigin({ ip: req.ip ?? null }, () =>
          spec.handler({ params, query, body, ctx, req, res, rawBody }),
        );
        // A handler that sets another status (GET /health's 503) answers with it.
        const status = result === undefined ? 204 : res.statusCode !== 200 ? res.statusCode : successStatus;
        return { status, body: result as unknown };
      };
      const answer = key
        ? await answerOnce(this.idempotencyKeys!, principal.id, key, req, body, act)
        : { ...(await act()), replayed: false };
      // The handler answered itself (an event stream).
      if (res.headersSent || res.writableEnded) return;
      if (answer.replayed) res.setHeader(REPLAYED_HEADER, 'true');
      if (spec.streamAnswer && answer.status < 300 && !wantsJson(req)) {
        await spec.streamAnswer(answer.body as Awaited<R>, { ctx, res });
      } else if (answer.status === 204) res.status(204).end();
      else res.status(answer.status).json(answer.body);
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
          headers: VERSION_HEADER,
          content: {
            [spec.contentType]: {
              schema: spec.contentType === 'application/json' ? { type: 'object' } : { type: 'string' },
            },
          },
        },
        403: {
          description: HOST_GUARD,
          headers: VERSION_HEADER,
          content: { 'application/json': { schema: ErrorBodySchema } },
        },
        default: otherAnswers({ 'application/json': { schema: ErrorBodySchema } }),
      },
    });
  }

  /** `serviceVersion`: the package's version, which is not the API's (see API_VERSION). */
  openApiDocument(info: { serviceVersion: string }): object {
    return refusingNul(withoutDiscriminators(this.generate(info)));
  }

  private generate(info: { serviceVersion: string }) {
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
        // The package is private (UNLICENSED): no public licence is granted. SPDX has no identifier for that, so a
        // LicenseRef- of its own says so (an SPDX expression, as OpenAPI 3.1 asks).
        license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
      },
      servers: [{ url: '/', description: 'the server that serves this document' }],
      tags: TAGS,
    });
  }
}

/**
 * A union's members are told apart by their `type`, a constant each of them requires, which every JSON Schema tool
 * and generator reads. The `discriminator` zod-to-openapi adds says no more, and it cannot be written so that all
 * tools take it: Ajv refuses its `mapping`, and without one the generators read the schema names as the values.
 */
function withoutDiscriminators<T>(node: T): T {
  if (Array.isArray(node)) node.forEach(withoutDiscriminators);
  else if (node && typeof node === 'object') {
    const schema = node as { discriminator?: unknown; oneOf?: unknown };
    if (schema.oneOf) delete schema.discriminator;
    Object.values(node).forEach(withoutDiscriminators);
  }
  return node;
}

/** What `parse` refuses in any text field of a request (PostgreSQL's text cannot store it). */
const NO_NUL = '^[^\\u0000]*$';

/**
 * Says in the document what `parse` checks of every request: no text field holds a NUL. Each free-text string a
 * request body or parameter takes (following its references into the components) gets the pattern; one that has a
 * format, an enum or a pattern of its own says enough already.
 */
function refusingNul<T extends object>(doc: T): T {
  const { components, paths } = doc as unknown as {
    components: { schemas: Record<string, object> };
    paths: Record<string, Record<string, { parameters?: { schema?: object }[]; requestBody?: object }>>;
  };
  const seen = new Set<object>();
  const visit = (node: unknown): void => {
    if (!node || typeof node !== 'object' || seen.has(node)) return;
    seen.add(node);
    if (Array.isArray(node)) return node.forEach(visit);
    const schema = node as Record<string, unknown>;
    if (typeof schema.$ref === 'string') visit(components.schemas[schema.$ref.split('/').at(-1)!]);
    const freeText = !('format' in schema) && !('enum' in schema) && !('const' in schema) && !('pattern' in schema);
    const text = schema.type === 'string' || (Array.isArray(schema.type) && schema.type.includes('string'));
    if (text && freeText) schema.pattern = NO_NUL;
    for (const key of ['properties', 'additionalProperties', 'items', 'anyOf', 'oneOf', 'allOf', 'prefixItems']) {
      const inner = schema[key];
      if (key === 'properties' && inner && typeof inner === 'object') Object.values(inner).forEach(visit);
      else visit(inner);
    }
  };
  for (const operation of Object.values(paths).flatMap((methods) => Object.values(methods))) {
    operation.parameters?.forEach((parameter) => visit(parameter.schema));
    const content = (operation.requestBody as { content?: Record<string, { schema?: object }> } | undefined)?.content;
    Object.values(content ?? {}).forEach((media) => visit(media.schema));
  }
  return doc;
}
