import { randomBytes } from 'node:crypto';
import express, { type Request, type Response, type Router } from 'express';
import type { InitializeRequest, RequestId } from '@modelcontextprotocol/sdk/types.js';
import type { Principal } from '../../auth/principal';
import { errorBody, forbidden, ServiceError } from '../../contracts/errors';
import { MCP_SCOPE } from '../../contracts/oauth';
import type { McpSession } from '../../storage/mcp-sessions';
import type { AppDeps } from '../deps';
import { bodyProblems } from '../body-problems';
import { jsonBodyParser } from '../errors';
import { isQuestionId, takeAnswer } from './elicitation-answers';
import type { McpRequestContext, McpServices } from './mcp-call';
import { RequestTaskStore } from './task-store';
import { atLeast, BATCHES_REMOVED_IN } from './protocol-versions';
import { registerTools } from './mcp-tools';
import { loadMcpServerSdk } from './mcp-server-sdk';
import { modernMcp } from './modern/modern-mcp';

export const MCP_PATH = '/mcp';
/** Where a client that was refused for want of a token learns what this resource is (RFC 9728). */
export const RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource/mcp';

const INSTRUCTIONS =
  'Runs the agents and commands of this workflow service, and answers the approvals that wait for you. ' +
  'list_agents shows what you can run; run_agent runs one and may ask you to approve inside the call; ' +
  'list_approvals and decide_approval answer what waits; get_run reads a run.';

/** The server's address as this request reached it (behind a proxy TRUST_PROXY names, the proxy's). */
export const baseUrlOf = (req: Request) => `${req.protocol}://${req.get('host')}`;

/** A refusal in the protocol's own shape: MCP clients read a JSON-RPC error, whatever the status. */
function protocolError(res: Response, status: number, message: string, code = -32000): void {
  res.status(status).json({ jsonrpc: '2.0', error: { code, message }, id: null });
}

/** The tasks this server offers (docs/mcp.md#runs-as-tasks): `tools/call` of run_agent, listed and cancelled. */
const TASK_CAPABILITIES = { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } };

/** The ids of the `tools/call` requests of a body (one message, or a batch) that ask to be run as tasks. */
function taskRequestsOf(body: unknown): Set<RequestId> {
  const messages: unknown[] = Array.isArray(body) ? body : [body];
  const ids = new Set<RequestId>();
  for (const message of messages) {
    const request = message as { method?: unknown; id?: unknown; params?: { task?: unknown } };
    if (request.method === 'tools/call' && request.params?.task !== undefined) ids.add(request.id as RequestId);
  }
  return ids;
}

/** The client can be asked questions in a form: `elicitation: {}` (form, by the protocol's default) or with `form`. */
function takesForms(request: InitializeRequest): boolean {
  const elicitation = request.params.capabilities.elicitation as Record<string, unknown> | undefined;
  return Boolean(elicitation) && (Object.keys(elicitation!).length === 0 || 'form' in elicitation!);
}

/**
 * `/mcp` (docs/mcp.md): the service as an MCP server over streamable HTTP, with the official SDK's server and
 * transport for the protocol. The SDK keeps a session in one process's memory; here a session is a row, so each
 * request is served by a fresh server and transport on whichever process it reaches, and the answer to a question
 * asked inside a call (elicitation) is taken on the process it reaches (elicitation-answers.ts).
 */
export function mcpRouter(deps: AppDeps, services: McpServices): Router {
  const router = express.Router();
  const allowedOrigins = new Set(deps.config.CORS_ORIGINS);
  const modern = modernMcp(deps, services);

  /**
   * The caller, or a 401 that names the resource metadata (the MCP authorization specification) and a 403 for a
   * foreign page (its Origin is neither absent, nor this server's, nor listed in CORS_ORIGINS).
   */
  async function caller(req: Request, res: Response): Promise<Principal | undefined> {
    const origin = req.headers.origin;
    if (origin && origin !== baseUrlOf(req) && !allowedOrigins.has(origin)) {
      const refused = forbidden(`requests from the page at ${origin} are not allowed: add it to CORS_ORIGINS`);
      res.status(403).json(errorBody(refused.code, refused.message));
      return undefined;
    }
    try {
      return await deps.auth.authenticate(req, { audience: deps.mcpOauth?.resource() });
    } catch (error) {
      if (!(error instanceof ServiceError) || error.status !== 401) throw error;
      const base = deps.mcpOauth?.issuer() ?? baseUrlOf(req);
      const scope = deps.mcpOauth ? `, scope="${MCP_SCOPE}"` : '';
      res.setHeader('WWW-Authenticate', `Bearer resource_metadata="${base}${RESOURCE_METADATA_PATH}"${scope}`);
      res.status(401).json(errorBody(error.code, error.message));
      return undefined;
    }
  }

  async function serve(req: Request, res: Response, principal: Principal, session: McpSession, stateful: boolean) {
    const { McpServer, StreamableHTTPServerTransport } = await loadMcpServerSdk();
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: stateful ? () => session.id : undefined,
    });
    const context: McpRequestContext = {
      principal,
      session,
      transport,
      baseUrl: baseUrlOf(req),
      taskRequests: taskRequestsOf(req.body),
    };
    const tasks = new RequestTaskStore(services, context);
    const server = new McpServer(
      { name: 'agent-workflow-service', version: deps.version },
      { instructions: INSTRUCTIONS, capabilities: TASK_CAPABILITIES, taskStore: tasks, taskMessageQueue: tasks },
    );
    registerTools(server, services, context, tasks);
    // The SDK declares `listChanged` for what is registered (tools, the approval card's resource); this server's lists
    // are the same for every request, so it never sends a change (and has no stream outside calls to send one on).
    server.server.registerCapabilities({ tools: { listChanged: false }, resources: { listChanged: false } });
    res.on('close', () => {
      void tasks.close();
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  }

  router.post(MCP_PATH, jsonBodyParser(deps.config.BODY_LIMIT), async (req, res) => {
    const principal = await caller(req, res);
    if (!principal) return;
    const refused = bodyProblems(req.body);
    if (refused.length) {
      const why = refused.map((f) => (f.field ? `${f.field}: ${f.message}` : f.message)).join('; ');
      return protocolError(res, 400, `Bad Request: invalid request body: ${why}`);
    }
    // A 2026-07-28 request carries its own revision and capabilities and has no session: the v2 server's.
    if (await modern.serve(req, res, principal, baseUrlOf(req))) return;
    const message: unknown = req.body;
    const sdk = await loadMcpServerSdk();
    if (sdk.isInitializeRequest(message)) {
      const session: McpSession = {
        id: randomBytes(24).toString('base64url'),
        user_id: principal.id,
        protocol_version: sdk.negotiatedVersion(message.params.protocolVersion),
        client_name: message.params.clientInfo.name,
        client_version: message.params.clientInfo.version,
        elicitation: takesForms(message),
      };
      await services.sessions.create(session);
      return serve(req, res, principal, session, true);
    }
    const session = await sessionOf(req, res, principal);
    if (!session) return;
    if (Array.isArray(message) && atLeast(session.protocol_version, BATCHES_REMOVED_IN)) {
      return protocolError(
        res,
        400,
        `Invalid Request: JSON-RPC batches are not part of protocol ${session.protocol_version} (removed in ${BATCHES_REMOVED_IN}): send one message per request`,
        -32600,
      );
    }
    if (sdk.isResponse(message) && isQuestionId(message.id)) {
      await takeAnswer(services, principal, session.id, message);
      res.status(202).end();
      return;
    }
    return serve(req, res, principal, session, false);
  });

  /** The session the request names, if it is the caller's; otherwise the protocol's 400 or 404 is answered. */
  async function sessionOf(req: Request, res: Response, principal: Principal): Promise<McpSession | undefined> {
    const id = req.get('mcp-session-id');
    if (!id) {
      protocolError(res, 400, 'Bad Request: Mcp-Session-Id header is required');
      return undefined;
    }
    const session = await services.sessions.use(id, principal.id);
    if (!session) protocolError(res, 404, 'Session not found');
    return session;
  }

  router.delete(MCP_PATH, async (req, res) => {
    const principal = await caller(req, res);
    if (!principal) return;
    const id = req.get('mcp-session-id');
    if (!id) return protocolError(res, 400, 'Bad Request: Mcp-Session-Id header is required');
    if (!(await services.sessions.end(id, principal.id))) return protocolError(res, 404, 'Session not found');
    res.status(200).end();
  });

  // No stream of the server's own: every message it sends belongs to a call (progress, questions).
  router.all(MCP_PATH, (_req, res) => {
    res.setHeader('Allow', 'POST, DELETE');
    protocolError(res, 405, 'Method not allowed: this server sends messages only within calls (POST)');
  });

  return router;
}
