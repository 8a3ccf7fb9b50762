import { z } from 'zod';
import type { AgentVersion } from '../../contracts/agents';
import type { ResolvedAgent } from '../../services/agent-directory';
import type { Api } from '../api';
import { API_VERSION } from '../api';
import type { AppDeps } from '../deps';
import { assistantIdOf } from './lg-ids';
import type { LgDoor } from './lg-door';
import type { Principal } from '../../auth/principal';
import {
  AssistantSearchSchema,
  AssistantVersionsSchema,
  LgAssistantSchema,
  LgGraphSchema,
  LgInfoSchema,
  type LgAssistant,
} from './lg-schemas';

/** The built-ins never change while the server runs: they are dated from its start. */
const LOADED_AT = new Date().toISOString();

export const AssistantParams = z.object({
  assistant_id: z.string().min(1).max(200).meta({ description: 'an assistant_id, or a graph_id (agent name)' }),
});

/** An agent or command as LangGraph's clients see an assistant: a built-in at version 1, a stored one at its own. */
function lgAssistant({ entry: { manifest }, stored }: ResolvedAgent): LgAssistant {
  return {
    assistant_id: assistantIdOf(manifest.name),
    graph_id: manifest.name,
    name: manifest.name,
    description: manifest.description || null,
    config: {},
    context: {},
    metadata: {
      kind: manifest.kind,
      category: manifest.category,
      created_by: stored ? 'user' : 'system',
      ...(stored ? { project_id: stored.projectId } : {}),
    },
    version: stored?.version ?? 1,
    created_at: stored?.updatedAt ?? LOADED_AT,
    updated_at: stored?.updatedAt ?? LOADED_AT,
  };
}

/** One saved version of a stored agent, as an assistant version (LangGraph's `getVersions`). */
function lgVersion(assistant: LgAssistant, version: AgentVersion): LgAssistant {
  return {
    ...assistant,
    version: version.version,
    metadata: { ...assistant.metadata, note: version.note, saved_by: version.created_by },
    created_at: version.created_at,
    updated_at: version.created_at,
  };
}

/**
 * Every agent and command the caller may see as an assistant (its graph's default assistant, as LangGraph names
 * them); a stored agent's versions are the assistant's versions.
 */
export function lgAssistantRoutes(api: Api, deps: AppDeps, door: LgDoor): void {
  const all = async (principal: Principal) => (await door.assistants(principal)).map(lgAssistant);

  api.route({
    method: 'get',
    path: '/lg/info',
    operationId: 'lgInfo',
    tag: 'langgraph',
    summary: 'LangGraph API: what this server offers (its clients ask before they sign in)',
    public: true,
    responses: { 200: { description: 'the server', schema: LgInfoSchema } },
    handler: () => ({ version: API_VERSION, flags: { assistants: true, crons: false, langsmith: false } }),
  });

  api.route({
    method: 'get',
    path: '/lg/ok',
    operationId: 'lgOk',
    tag: 'langgraph',
    summary: 'LangGraph API: the server answers',
    public: true,
    responses: { 200: { description: 'it does', schema: z.object({ ok: z.literal(true) }) } },
    handler: () => ({ ok: true as const }),
  });

  const matching = async (principal: Principal, body: z.infer<typeof AssistantSearchSchema>) =>
    (await all(principal)).filter(
      (a) =>
        (!body.graph_id || a.graph_id === body.graph_id) &&
        (!body.name || a.name === body.name) &&
        Object.entries(body.metadata ?? {}).every(([key, value]) => a.metadata[key] === value),
    );

  api.route({
    method: 'post',
    path: '/lg/assistants/search',
    operationId: 'lgSearchAssistants',
    tag: 'langgraph',
    summary: 'LangGraph API: the assistants, one per agent and command',
    body: AssistantSearchSchema,
    responses: { 200: { description: 'the assistants', schema: z.array(LgAssistantSchema) } },
    handler: async ({ body, ctx }) => {
      const offset = body.offset ?? 0;
      return (await matching(ctx.principal, body)).slice(offset, offset + (body.limit ?? 10));
    },
  });

  api.route({
    method: 'post',
    path: '/lg/assistants/count',
    operationId: 'lgCountAssistants',
    tag: 'langgraph',
    summary: 'LangGraph API: how many assistants match',
    body: AssistantSearchSchema,
    responses: { 200: { description: 'the count', schema: z.number().int() } },
    handler: async ({ body, ctx }) => (await matching(ctx.principal, body)).length,
  });

  api.route({
    method: 'get',
    path: '/lg/assistants/{assistant_id}',
    operationId: 'lgGetAssistant',
    tag: 'langgraph',
    summary: 'LangGraph API: one assistant',
    params: AssistantParams,
    responses: { 200: { description: 'the assistant', schema: LgAssistantSchema } },
    handler: async ({ params, ctx }) => lgAssistant(await door.agent(ctx.principal, params.assistant_id)),
  });

  api.route({
    method: 'post',
    path: '/lg/assistants/{assistant_id}/versions',
    operationId: 'lgListAssistantVersions',
    tag: 'langgraph',
    summary: "LangGraph API: the assistant's versions, newest first (a built-in has one)",
    params: AssistantParams,
    body: AssistantVersionsSchema,
    responses: { 200: { description: 'the versions', schema: z.array(LgAssistantSchema) } },
    handler: async ({ params, body, ctx }) => {
      const agent = await door.agent(ctx.principal, params.assistant_id);
      const assistant = lgAssistant(agent);
      const versions = agent.stored
        ? (await deps.agentsService.versions(ctx.principal, agent.entry.manifest.name, agent.stored.projectId)).map(
            (version) => lgVersion(assistant, version),
          )
        : [assistant];
      const offset = body.offset ?? 0;
      return versions
        .filter((v) => Object.entries(body.metadata ?? {}).every(([key, value]) => v.metadata[key] === value))
        .slice(offset, offset + (body.limit ?? 10));
    },
  });

  api.route({
    method: 'post',
    path: '/lg/assistants/{assistant_id}/latest',
    operationId: 'lgSetLatestAssistantVersion',
    tag: 'langgraph',
    summary:
      'LangGraph API: make a version current again; here that saves its text as a new version, so the history only grows',
    params: AssistantParams,
    body: z.object({ version: z.number().int().min(1) }),
    errors: {
      403: "needs the owner role on the agent's project (forbidden)",
      404: 'no such assistant or version (not_found)',
      409: 'a built-in has no other version (conflict)',
    },
    responses: { 200: { description: 'the assistant at its new version', schema: LgAssistantSchema } },
    handler: async ({ params, body, ctx }) => {
      const agent = await door.agent(ctx.principal, params.assistant_id);
      const name = agent.entry.manifest.name;
      await deps.agentsService.restore(ctx.principal, name, body.version, agent.stored?.projectId);
      return lgAssistant(await door.agent(ctx.principal, name));
    },
  });

  api.route({
    method: 'get',
    path: '/lg/assistants/{assistant_id}/graph',
    operationId: 'lgGetAssistantGraph',
    tag: 'langgraph',
    summary: "LangGraph API: the assistant's graph (its phases and edges)",
    params: AssistantParams,
    query: z.object({ xray: z.string().max(10).optional() }),
    responses: { 200: { description: 'the graph', schema: LgGraphSchema } },
    handler: async ({ params, ctx }) => {
      const { layout } = (await door.agent(ctx.principal, params.assistant_id)).entry;
      return {
        nodes: [
          { id: '__start__', type: 'schema', data: '__start__' },
          ...layout.nodes.map((n) => ({ id: n.id, type: 'runnable', data: { id: [n.kind], name: n.name ?? n.id } })),
          { id: '__end__', type: 'schema', data: '__end__' },
        ],
        edges: [
          { source: '__start__', target: layout.entry },
          ...layout.edges.map((e) => ({
            source: e.from,
            target: e.to,
            ...(e.condition ? { data: e.condition, conditional: true } : {}),
          })),
        ],
      };
    },
  });

  api.route({
    method: 'get',
    path: '/lg/assistants/{assistant_id}/schemas',
    operationId: 'lgGetAssistantSchemas',
    tag: 'langgraph',
    summary: "LangGraph API: the assistant's input, state and configuration schemas",
    params: AssistantParams,
    responses: {
      200: {
        description: 'JSON Schemas',
        schema: z.object({
          graph_id: z.string(),
          input_schema: z.record(z.string(), z.unknown()),
          output_schema: z.record(z.string(), z.unknown()),
          state_schema: z.record(z.string(), z.unknown()),
          config_schema: z.record(z.string(), z.unknown()),
          context_schema: z.record(z.string(), z.unknown()),
        }),
      },
    },
    handler: async ({ params, ctx }) => {
      const { manifest } = (await door.agent(ctx.principal, params.assistant_id)).entry;
      const messages = { type: 'array', items: { type: 'object' } };
      const state = {
        type: 'object',
        properties: { messages, outputs: { type: 'object', additionalProperties: { type: 'string' } } },
      };
      const options = {
        type: 'object',
        properties: { model: { type: 'string' }, project_path: { type: 'string' } },
      };
      return {
        graph_id: manifest.name,
        input_schema: { type: 'object', properties: { messages, message: { type: 'string' } } },
        output_schema: state,
        state_schema: state,
        config_schema: options,
        context_schema: options,
      };
    },
  });
}
