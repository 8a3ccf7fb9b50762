import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import express, { type Request, type Response, type Router } from 'express';
import { type z } from 'zod';
import type { Authenticator } from '../auth/authenticator';
import { PUBLIC_VISITOR, type RequestContext } from '../auth/principal';
import { ErrorBodySchema } from '../contracts/common';
import { badRequest, unsupportedMediaType } from '../contracts/errors';

type Method = 'get' | 'post' | 'put' | 'delete';
type AnyObject = z.ZodType<Record<string, unknown>>;

interface ResponseSpec {
  description: string;
  schema?: z.ZodType;
  /** Defaults to application/json; SSE routes say text/event-stream. */
  contentType?: string;
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

const errorResponses = {
  400: 'invalid request',
  401: 'missing or invalid token',
  403: 'role does not allow this',
  404: 'not found',
  503: 'the database is unreachable (database_unavailable): try again shortly',
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

  constructor(private readonly auth: Authenticator) {
    this.registry.registerComponent('securitySchemes', 'bearer', { type: 'http', scheme: 'bearer' });
  }

  route<P extends AnyObject, Q extends AnyObject, B extends z.ZodType = z.ZodUndefined>(
    spec: RouteSpec<P, Q, B>,
  ): void {
    const responses: Record<string, object> = {};
    for (const [status, r] of Object.entries(spec.responses)) {
      responses[status] = r.schema
        ? { description: r.description, content: { [r.contentType ?? 'application/json']: { schema: r.schema } } }
        : { description: r.description };
    }
    for (const [status, description] of Object.entries(errorResponses)) {
      if (status === '401' && spec.public) continue;
      responses[status] ??= { description, content: { 'application/json': { schema: ErrorBodySchema } } };
    }
    this.registry.registerPath({
      method: spec.method,
      path: spec.path,
      operationId: spec.operationId,
      summary: spec.summary,
      tags: [spec.tag],
      security: spec.public ? [] : [{ bearer: [] }],
      request: {
        ...(spec.params ? { params: spec.params as never } : {}),
        ...(spec.query ? { query: spec.query as never } : {}),
        ...(spec.body ? { body: { required: true, content: { 'application/json': { schema: spec.body } } } } : {}),
      },
      responses,
    });

    const expressPath = spec.path.replace(/\{(\w+)\}/g, ':$1');
    this.router[spec.method](expressPath, async (req, res) => {
      const principal = spec.public
        ? await this.auth.authenticate(req).catch(() => PUBLIC_VISITOR)
        : await this.auth.authenticate(req);
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

  openApiDocument(info: { version: string; serverUrl?: string }): object {
    return new OpenApiGeneratorV31(this.registry.definitions).generateDocument({
      openapi: '3.1.0',
      info: {
        title: 'Agent workflow service',
        version: info.version,
        description:
          'Runs agents and commands as LangGraph graphs, streams their output as server-sent events, and stops at approval gates until a person decides.',
      },
      ...(info.serverUrl ? { servers: [{ url: info.serverUrl }] } : {}),
    });
  }
}
