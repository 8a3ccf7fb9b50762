import { z } from 'zod';
import { UuidSchema } from '../contracts/common';
import { AssetSummarySchema, type AssetKind, type AssetSummary } from '../contracts/assets';
import type { ResolvedAgent } from '../services/agent-directory';
import { GraphDefinitionSchema, NodeConfigSchema, SavedNodeConfigSchema } from '../contracts/runs';
import type { Api } from './api';
import type { AppDeps } from './deps';

export function summary({ entry: { manifest }, version, stored }: ResolvedAgent): AssetSummary {
  return {
    name: manifest.name,
    description: manifest.description,
    kind: manifest.kind,
    category: manifest.category,
    phases: manifest.phases.map(({ id, name, kind }) => ({ id, name, kind })),
    origin: stored ? 'stored' : 'built_in',
    version,
    project_id: stored?.projectId ?? null,
    shared: stored?.shared ?? false,
  };
}

/** Which project's agents a list shows: its own and those shared with its organisation, with the built-ins. */
const ListQuery = z.object({ project_id: UuidSchema.optional() });

export function assetRoutes(api: Api, deps: AppDeps): void {
  const list = (kind: AssetKind, path: string, operationId: string, summaryText: string) =>
    api.route({
      method: 'get',
      path,
      operationId,
      tag: 'assets',
      summary: summaryText,
      query: ListQuery,
      errors: { 404: 'the project is not visible to the caller (not_found)' },
      responses: {
        200: {
          description: `every ${kind} the caller may see: the built-ins, then those stored in her projects`,
          schema: z.array(AssetSummarySchema),
        },
      },
      handler: async ({ query, ctx }) => {
        if (query.project_id)
          await deps.access.requireProjectRole(
            ctx.principal,
            query.project_id,
            'viewer',
            `project ${query.project_id}`,
          );
        return (await deps.agents.list(ctx.principal, kind, query.project_id)).map(summary);
      },
    });
  list('agent', '/agents', 'listAgents', 'List all agents');
  list('command', '/commands', 'listCommands', 'List all commands');
}

/** Whose phase configuration: a project's (its own over its organisation's) or an organisation's. */
const ScopeQuery = z.object({
  project_id: UuidSchema.optional(),
  org_id: UuidSchema.optional(),
});
const scopeOf = (query: z.infer<typeof ScopeQuery>) => ({ projectId: query.project_id, orgId: query.org_id });
const NodeParams = z.object({ agent: z.string().min(1).max(200), node: z.string().min(1).max(100) });

export function phaseConfigRoutes(api: Api, { phaseConfig }: AppDeps): void {
  api.route({
    method: 'get',
    path: '/agents/{agent}/graph-definition',
    operationId: 'getGraphDefinition',
    tag: 'assets',
    summary: 'Runtime contract projection: phases with their defaults and saved overrides, edges with their conditions',
    params: z.object({ agent: z.string().min(1).max(200) }),
    query: ScopeQuery,
    errors: { 404: 'no such agent or command, or the project or organisation is not visible to the caller' },
    responses: { 200: { description: 'the graph definition', schema: GraphDefinitionSchema } },
    handler: ({ params, query, ctx }) => phaseConfig.graphDefinition(ctx.principal, params.agent, scopeOf(query)),
  });

  api.route({
    method: 'get',
    path: '/agents/{agent}/nodes/{node}/config',
    operationId: 'getNodeConfig',
    tag: 'assets',
    summary: "A node's configuration saved on the project or organisation named (its own record, nothing inherited)",
    params: NodeParams,
    query: ScopeQuery,
    errors: { 404: 'no such agent or node, or the project or organisation is not visible to the caller' },
    responses: { 200: { description: 'the saved overrides', schema: NodeConfigSchema } },
    handler: ({ params, query, ctx }) => phaseConfig.get(ctx.principal, params.agent, params.node, scopeOf(query)),
  });

  api.route({
    method: 'put',
    path: '/agents/{agent}/nodes/{node}/config',
    operationId: 'saveNodeConfig',
    tag: 'assets',
    summary: "Save a node's configuration: instructions override, classification labels, routing rules, notes",
    params: NodeParams,
    query: ScopeQuery,
    body: NodeConfigSchema,
    errors: {
      403:
        'saving needs the owner role on the project or organisation, and a routing rule that skips a gate needs ' +
        "the role that gate's decide_role asks for there (forbidden; details.fields names each such rule)",
      404: 'no such agent or node, or the project or organisation is not visible to the caller',
    },
    responses: {
      200: {
        description: 'the saved overrides, with a warning for each gate one of its routing rules skips',
        schema: SavedNodeConfigSchema,
      },
    },
    handler: ({ params, query, body, ctx }) =>
      phaseConfig.save(ctx.principal, params.agent, params.node, body, scopeOf(query)),
  });

  api.route({
    method: 'delete',
    path: '/agents/{agent}/nodes/{node}/config',
    operationId: 'deleteNodeConfig',
    tag: 'assets',
    summary:
      "Remove the configuration saved on the project or organisation named: a project's phase applies its organisation's again",
    params: NodeParams,
    query: ScopeQuery,
    errors: { 403: 'needs the owner role where the configuration is kept (forbidden)' },
    responses: { 204: { description: 'removed' } },
    handler: async ({ params, query, ctx }) => {
      await phaseConfig.remove(ctx.principal, params.agent, params.node, scopeOf(query));
    },
  });
}
