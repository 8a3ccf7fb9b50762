import type { RequestHandler } from 'express';
import { isLoopbackHost, type Config } from '../config';
import { errorBody } from '../contracts/errors';

/**
 * A server on loopback answers only requests addressed to a loopback name: a web page on another
 * site cannot reach it through DNS rebinding.
 */
export function loopbackHostGuard(config: Config): RequestHandler {
  const active = isLoopbackHost(config.HOST);
  return (req, res, next) => {
    if (!active) return next();
    const host = (req.headers.host ?? '').replace(/:\d+$/, '').replace(/^\[(.*)\]$/, '$1');
    if (isLoopbackHost(host)) return next();
    res
      .status(403)
      .json(errorBody('forbidden_host', `requests to this server must address it by a loopback name, not "${host}"`));
  };
}

/** The answer headers the document declares, readable by a page on a listed origin. */
const EXPOSED_HEADERS =
  'Content-Type, API-Version, Retry-After, Location, Content-Location, X-Pagination-Total, X-Pagination-Next, ' +
  'Idempotent-Replayed, Mcp-Session-Id, WWW-Authenticate';

/**
 * A path whose percent-encoding does not decode (`%zz`, a lone `%`, a cut or overlong UTF-8 sequence) is answered
 * 400 here, on every route: the routers would otherwise throw while decoding it into a path parameter, which is the
 * client's mistake but reached the error handler as an unknown error (a 500 and a stack trace in the log).
 */
export function pathEncodingGuard(): RequestHandler {
  return (req, res, next) => {
    if (!req.path.includes('%')) return next();
    const undecodable = req.path.split('/').find((segment) => !decodes(segment));
    if (undecodable === undefined) return next();
    const shown = undecodable.length > 80 ? `${undecodable.slice(0, 80)}…` : undecodable;
    res.status(400).json(errorBody('invalid_request', `invalid path: "${shown}" is not valid percent-encoded UTF-8`));
  };
}

function decodes(segment: string): boolean {
  try {
    decodeURIComponent(segment);
    return true;
  } catch {
    return false;
  }
}

/**
 * No CORS unless CORS_ORIGINS lists origins; then exactly those, preflight included. Every answer then depends on
 * the Origin header (with or without the CORS headers), so every answer says `Vary: Origin`: a shared cache must
 * not hand one origin's answer to another.
 */
export function cors(config: Config): RequestHandler {
  const allowed = new Set(config.CORS_ORIGINS);
  return (req, res, next) => {
    if (allowed.size === 0) return next();
    res.vary('Origin');
    const origin = req.headers.origin;
    if (!origin || !allowed.has(origin)) return next();
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Access-Control-Expose-Headers', EXPOSED_HEADERS);
    if (req.method === 'OPTIONS') {
      res.setHeader('Access-Control-Allow-Methods', 'GET, POST, PUT, PATCH, DELETE');
      res.setHeader(
        'Access-Control-Allow-Headers',
        'Authorization, Content-Type, Last-Event-ID, Accept, Idempotency-Key, Mcp-Session-Id, Mcp-Protocol-Version, ' +
          'traceparent, tracestate, X-Api-Key, X-Auth-Scheme',
      );
      res.setHeader('Access-Control-Max-Age', '600');
      res.status(204).end();
      return;
    }
    next();
  };
}
