import { z } from 'zod';
import type { Api } from '../api';
import { baseUrlOf, MCP_PATH, RESOURCE_METADATA_PATH } from './mcp.router';

const ResourceMetadataSchema = z
  .object({
    resource: z.string().meta({ description: 'the MCP server this describes: `<server>/mcp`' }),
    bearer_methods_supported: z.array(z.string()),
    resource_name: z.string(),
    resource_documentation: z.string(),
  })
  .meta({ id: 'ProtectedResourceMetadata' });

/**
 * The protected-resource metadata (RFC 9728) that a 401 from /mcp points to. It names no authorization server: the
 * tokens /mcp takes are this service's own (personal access tokens, sessions, the API token), not an OpenID
 * provider's access tokens (docs/mcp.md#tokens).
 */
export function resourceMetadataRoutes(api: Api): void {
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
      handler: ({ req }) => ({
        resource: `${baseUrlOf(req)}${MCP_PATH}`,
        bearer_methods_supported: ['header'],
        resource_name: 'Agent workflow service',
        resource_documentation: `${baseUrlOf(req)}/`,
      }),
    });
  }
}
