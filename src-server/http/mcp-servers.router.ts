import { z } from 'zod';
import { ServerFrontmatterSchema } from '../assets/tool-declarations';
import { RegisteredMcpServerSchema, TOOL_NAME_PATTERN } from '../contracts/tools';
import type { McpRegistryService } from '../services/mcp-registry.service';
import type { Api } from './api';

/**
 * PUT /mcp-servers/{name}: a server as an asset's `tools.servers.<name>` declares it; a registered server is a
 * program or an address itself, so it takes no `registry`.
 */
const McpServerBodySchema = ServerFrontmatterSchema.omit({ registry: true }).meta({
  id: 'McpServerBody',
  description:
    '`command` (with `args`, `env`: a program over stdio) or `url` (with `headers`: streamable HTTP); `env` and ' +
    "`headers`' values name environment variables of the service, never their values",
  examples: [{ url: 'https://wiki.example.com/mcp', headers: { Authorization: 'WIKI_AUTHORIZATION' } }],
});

const NameParams = z.object({
  name: z.string().regex(TOOL_NAME_PATTERN, 'must be 1 to 64 letters, digits, _ and -'),
});

const ADMIN_ONLY = { 403: 'needs the instance administrator (forbidden)' } as const;

/** /mcp-servers: the instance's registry of MCP servers, which stored agents name. */
export function mcpServersRoutes(api: Api, registry: McpRegistryService): void {
  const tag = 'assets';
  api.route({
    method: 'get',
    path: '/mcp-servers',
    operationId: 'listMcpServers',
    tag,
    summary: "The instance's registered MCP servers (their declarations for instance administrators only)",
    responses: { 200: { description: 'the servers, by name', schema: z.array(RegisteredMcpServerSchema) } },
    handler: ({ ctx }) => registry.list(ctx.principal),
  });
  api.route({
    method: 'put',
    path: '/mcp-servers/{name}',
    operationId: 'registerMcpServer',
    tag,
    summary: 'Register an MCP server under a name, or replace the one registered under it (instance administrator)',
    params: NameParams,
    body: McpServerBodySchema,
    errors: {
      ...ADMIN_ONLY,
      400: 'a declaration a shipped asset could not make: both or neither of command and url, a variable that is not a name or is one the service reads itself, a url that is not http(s) or carries credentials, the name `project` (invalid_request)',
    },
    responses: { 200: { description: 'the server as registered', schema: RegisteredMcpServerSchema } },
    handler: ({ params, body, ctx }) => registry.register(ctx.principal, params.name, body),
  });
  api.route({
    method: 'delete',
    path: '/mcp-servers/{name}',
    operationId: 'removeMcpServer',
    tag,
    summary: 'Remove a registered MCP server (instance administrator)',
    params: NameParams,
    errors: { ...ADMIN_ONLY, 404: 'no server is registered under the name (not_found)' },
    responses: { 204: { description: 'removed' } },
    handler: async ({ params, ctx }) => {
      await registry.remove(ctx.principal, params.name);
    },
  });
}
