import type { RequestHandler } from 'express';
import type { Api } from '../api';
import type { AppDeps } from '../deps';
import { lgAssistantRoutes } from './lg-assistants.routes';
import { LgDoor } from './lg-door';
import { lgRunRoutes } from './lg-runs.routes';
import { lgThreadRoutes } from './lg-threads.routes';

/** Where the LangGraph API is served: its clients take it as their `apiUrl` (`http://host:8000/lg`). */
export const LG_PREFIX = '/lg';

/**
 * The LangGraph API (docs/langgraph-api.md): the routes LangChain's own clients call, under /lg, onto the same
 * services as the native routes. Declared like every route, so /openapi.json lists them under the `langgraph` tag.
 */
export function langgraphRoutes(api: Api, deps: AppDeps): void {
  const door = new LgDoor(deps);
  lgAssistantRoutes(api, deps, door);
  lgThreadRoutes(api, deps, door);
  lgRunRoutes(api, deps, door);
}

/**
 * LangGraph's clients send their key as `X-Api-Key`, never as a bearer token: under /lg the key is read there too,
 * as the same token (an Authorization header, when there is one, wins).
 */
export const lgApiKeyHeader: RequestHandler = (req, _res, next) => {
  const key = req.get('x-api-key');
  if (key && req.headers.authorization === undefined) req.headers.authorization = `Bearer ${key}`;
  next();
};
