import { McpGrantSchema } from '@contracts/oauth';
import { z } from 'zod';
import { api } from './http';

/** The MCP clients the signed-in person allowed with OAuth, and signing one out. */
export const mcpGrantsApi = {
  list: () => api('/me/mcp-grants', { schema: z.array(McpGrantSchema) }),
  revoke: (id: string) => api<void>(`/me/mcp-grants/${encodeURIComponent(id)}/revoke`, { method: 'POST' }),
};
