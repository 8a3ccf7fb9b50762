import { z } from 'zod';
import type { Api } from '../api';
import type { AppDeps } from '../deps';
import { MCP_SCOPE } from '../../contracts/oauth';
import { baseUrlOf, MCP_PATH, RESOURCE_METADATA_PATH } from './mcp.router';

const ResourceMetadataSchema = z
  .object({
    resource: z.string().meta({ description: 'the MCP server this describes: `<server>/mcp`' }),
    authorization_servers: z
      .array(z.string())
      .optional()
      .meta({
        description:
          'this service itself, on a server that signs people in with OIDC: MCP clients sign in through it (OAuth ' +
          '2.1 with PKCE); absent otherwise, where a client sends a personal access token',
      }),
    scopes_supported: z.array(z.string()).optional(),
    bearer_methods_supported: z.array(z.string()),
    resource_name: z.string(),
    resource_documentation: z.string(),
  })
  .meta({ id: 'ProtectedResourceMetadata' });

/**
 * The protected-resource metadata (RFC 9728) that a 401 from /mcp points to. On a server that signs people in with
 * OIDC it names the service itself as the authorization server (docs/mcp.md#signing-in-with-oauth), at its public
 * address; otherwise it names none, and a client sends a personal access token (docs/mcp.md#tokens), which the
 * documentation it links says.
 */
export function resourceMetadataRoutes(api: Api, { mcpOauth }: AppDeps): void {
  for (const [path, operationId] of [
    [RESOURCE_METADATA_PATH, 'getMcpResourceMetadata'],
    ['/.well-known/oauth-protected-resource', 'getResourceMetadata'],
  ] as const) {
    api.route({
      method: 'get',
      path,
      operationId,
      tag: 'mcp',
      public: true,
      summary: 'What the MCP server at /mcp is and how it takes a token (OAuth protected-resource metadata, RFC 9728)',
      responses: { 200: { description: 'the metadata', schema: ResourceMetadataSchema } },
      handler: ({ req }) =>
        mcpOauth
          ? {
              resource: mcpOauth.resource(),
              authorization_servers: [mcpOauth.issuer()],
              scopes_supported: [MCP_SCOPE],
              bearer_methods_supported: ['header'],
              resource_name: 'Agent workflow service',
              resource_documentation: `${mcpOauth.issuer()}/#mcp`,
            }
          : {
              resource: `${baseUrlOf(req)}${MCP_PATH}`,
              bearer_methods_supported: ['header'],
              resource_name: 'Agent workflow service (send a personal access token: no OAuth sign-in here)',
              resource_documentation: `${baseUrlOf(req)}/#mcp`,
            },
    });
  }
}
