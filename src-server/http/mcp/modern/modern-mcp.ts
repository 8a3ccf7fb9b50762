import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import type { Request, Response } from 'express';
import type { AuthInfo, CallToolResult, McpHttpHandler, McpServer, ServerContext } from '@modelcontextprotocol/server';
import type { Principal } from '../../../auth/principal';
import { errorMessage } from '../../../contracts/errors';
import { getLogger } from '../../../log';
import type { AppDeps } from '../../deps';
import { registerApprovalCard } from '../approval-card';
import type { McpServices } from '../mcp-call';
import { DecideInput, RunAgentInput, RunResult } from '../mcp-schemas';
import {
  DECIDE_APPROVAL,
  decideApproval,
  decided,
  RUN_AGENT_TITLE,
  sharedTools,
  type ToolCaller,
} from '../common-tools';
import { toolAnswer } from '../tool-answer';
import { modernRunAgent, type AskedAt } from './modern-run-agent';
import { loadModernSdk, MODERN_REVISION, PROTOCOL_VERSION_KEY, type ModernSdk } from './modern-sdk';

const log = getLogger('svc.api');

const headerOf = (req: Request, name: string) => req.get(name) ?? '';

/**
 * Whether a request may be a 2026-07-28 one, read without the SDK: its body carries the revision's `_meta` envelope,
 * or its header names a 2026 revision. Anything else (initialize, a session's request, a posted answer) is the v1
 * server's; the SDK's own classification decides the rest (isLegacyRequest).
 */
export function mayBeModern(req: Request): boolean {
  const body = req.body as { params?: { _meta?: Record<string, unknown> } } | undefined;
  const claimed = !Array.isArray(body) && body?.params?._meta?.[PROTOCOL_VERSION_KEY] !== undefined;
  return claimed || headerOf(req, 'mcp-protocol-version') >= MODERN_REVISION;
}

const INSTRUCTIONS =
  'Runs the agents and commands of this workflow service, and answers the approvals that wait for you. ' +
  'list_agents shows what you can run; run_agent runs one and, where a person decides, answers input_required with ' +
  'the question; list_approvals and decide_approval answer what waits; get_run reads a run.';

/**
 * `/mcp` for protocol 2026-07-28 (docs/mcp.md#protocol-versions), on the MCP SDK's v2 server: stateless, each request
 * carrying its own revision and capabilities, served by a fresh server on whichever process it reaches. The tools are
 * the 2025 session's (common-tools.ts), with the caller the router authenticated; run_agent asks in its result
 * (modern-run-agent.ts) rather than inside the call, with its state signed by a key every process derives alike.
 */
export function modernMcp(deps: AppDeps, services: McpServices) {
  let handler: Promise<{ sdk: ModernSdk; mcp: McpHttpHandler }> | undefined;

  async function build() {
    const sdk = await loadModernSdk();
    const codec = sdk.createRequestStateCodec<AskedAt>({
      key: deps.auth.derivedKey('mcp-request-state'),
      ttlSeconds: services.elicitationTimeoutS,
      // A question's state is good as long as a 2025 session's question waits, and only for the person it was minted
      // for: another's token cannot send it back.
      bind: (ctx: ServerContext) => (ctx.http?.authInfo?.extra?.caller as ToolCaller | undefined)?.principal.id ?? '',
    });
    const mcp = sdk.createMcpHandler(
      ({ authInfo }) => {
        const caller = authInfo?.extra?.caller as ToolCaller;
        const server = new sdk.McpServer(
          { name: 'agent-workflow-service', version: deps.version },
          { instructions: INSTRUCTIONS, requestState: { verify: codec.verify } },
        );
        registerModernTools(sdk, server, services, caller, (state, ctx) => codec.mint(state, ctx));
        return server;
      },
      // 2025-era requests never reach this handler: the v1 server answers them, with their sessions.
      { legacy: 'reject', onerror: (error) => log.warn(`a 2026-07-28 MCP request failed: ${errorMessage(error)}`) },
    );
    return { sdk, mcp };
  }

  return {
    /** Serves the request when the SDK classifies it as 2026-07-28; false when it is the v1 server's. */
    async serve(req: Request, res: Response, principal: Principal, baseUrl: string): Promise<boolean> {
      if (!mayBeModern(req)) return false;
      handler ??= build();
      const { sdk, mcp } = await handler;
      const aborted = new AbortController();
      res.on('close', () => aborted.abort());
      const request = webRequest(req, baseUrl, aborted.signal);
      if (await sdk.isLegacyRequest(request.clone(), req.body)) return false;
      const caller: ToolCaller = { principal, baseUrl };
      const authInfo: AuthInfo = { token: '', clientId: '', scopes: [], extra: { caller } };
      await sendWeb(res, await mcp.fetch(request, { authInfo, parsedBody: req.body }));
      return true;
    },
  };
}

function registerModernTools(
  sdk: ModernSdk,
  server: McpServer,
  services: McpServices,
  caller: ToolCaller,
  mint: (state: AskedAt, ctx: ServerContext) => Promise<string>,
): void {
  const card = registerApprovalCard(server as never);
  for (const tool of sharedTools(services, caller, card)) {
    server.registerTool(tool.name, tool.config, async (input: unknown) =>
      asModern(await toolAnswer(() => tool.run(input as never))),
    );
  }
  const runAgent = modernRunAgent(sdk, services, caller, mint);
  server.registerTool(
    'run_agent',
    {
      title: RUN_AGENT_TITLE,
      description:
        'Runs an agent or command with a message and answers its output when it ends. Where the run stops for a ' +
        'person (an approval gate, or a tool call that asks) whom you may stand for, the result is input_required ' +
        'with the question; send the call again with the answer and the run goes on. Otherwise the result says the ' +
        "run waits, with what to decide and the studio's link.",
      inputSchema: RunAgentInput,
      outputSchema: RunResult,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
      _meta: card,
    },
    async (input, ctx) => runAgent(input, ctx),
  );
  server.registerTool(
    'decide_approval',
    {
      title: DECIDE_APPROVAL.title,
      description:
        'Approve, edit, respond to or reject a gate (name it with `gate`) or a tool call (name it with `call_id`) ' +
        'that a run of the thread waits at. The run resumes once it has its approvals.',
      inputSchema: DecideInput,
      outputSchema: DECIDE_APPROVAL.outputSchema,
      annotations: { ...DECIDE_APPROVAL.annotations },
    },
    async (input) =>
      asModern(await toolAnswer(async () => decided(await decideApproval(services, caller.principal, input)))),
  );
}

/** A tool's answer as the v2 server types it: the same result, whose types the two SDK lines each declare. */
const asModern = (result: unknown) => result as CallToolResult;

/** The request as the v2 handler takes it (a web Request), its JSON body already read by the router. */
function webRequest(req: Request, baseUrl: string, signal: AbortSignal): globalThis.Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || name === 'content-length' || name === 'transfer-encoding') continue;
    for (const one of [value].flat()) headers.append(name, one);
  }
  return new Request(`${baseUrl}${req.originalUrl}`, {
    method: req.method,
    headers,
    body: JSON.stringify(req.body),
    signal,
  });
}

/** Sends the v2 handler's answer: its status and headers, then its body as it comes (JSON, or an event stream). */
async function sendWeb(res: Response, answer: globalThis.Response): Promise<void> {
  res.status(answer.status);
  answer.headers.forEach((value, name) => res.setHeader(name, value));
  if (!answer.body) {
    res.end();
    return;
  }
  await new Promise<void>((resolve) => {
    Readable.fromWeb(answer.body as unknown as NodeReadableStream)
      .on('error', () => res.destroy())
      .pipe(res)
      .on('finish', resolve)
      .on('close', resolve);
  });
}
