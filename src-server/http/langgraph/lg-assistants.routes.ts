import { z } from 'zod';
import type { CatalogEntry } from '../../assets/catalog';
import type { Api } from '../api';
import { API_VERSION } from '../api';
import type { AppDeps } from '../deps';
import { assistantIdOf } from './lg-ids';
import type { LgDoor } from './lg-door';
import { AssistantSearchSchema, LgAssistantSchema, LgGraphSchema, LgInfoSchema, type LgAssistant } from './lg-schemas';

/** Assistants never change while the server runs: they are dated from its start. */
const LOADED_AT = new Date().toISOString();

export const AssistantParams = z.object({
  assistant_id: z.string().min(1).max(200).meta({ description: 'an assistant_id, or a graph_id (agent name)' }),
});

function lgAssistant(entry: CatalogEntry): LgAssistant {
  const { manifest } = entry;
  return {
    assistant_id: assistantIdOf(manifest.name),
    graph_id: manifest.name,
    name: manifest.name,
    description: manifest.description || null,
    config: {},
    context: {},
    metadata: { kind: manifest.kind, category: manifest.category, created_by: 'system' },
    version: 1,
    created_at: LOADED_AT,
    updated_at: LOADED_AT,
  };
}

/** Every agent and command as a read-only assistant (its graph's default assistant, as LangGraph names them). */
export function lgAssistantRoutes(api: Api, deps: AppDeps, door: LgDoor): void {
  const all = () =>
    [...deps.catalog.list('agent'), ...deps.catalog.list('command')].map((m) => lgAssistant(deps.catalog.get(m.name)!));

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

  const matching = (body: z.infer<typeof AssistantSearchSchema>) =>
    all().filter(
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
    handler: ({ body }) => {
      const offset = body.offset ?? 0;
      return matching(body).slice(offset, offset + (body.limit ?? 10));
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
    handler: ({ body }) => matching(body).length,
  });

  api.route({
    method: 'get',
    path: '/lg/assistants/{assistant_id}',
    operationId: 'lgGetAssistant',
    tag: 'langgraph',
    summary: 'LangGraph API: one assistant',
    params: AssistantParams,
    responses: { 200: { description: 'the assistant', schema: LgAssistantSchema } },
    handler: ({ params }) => lgAssistant(door.entry(params.assistant_id)),
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
    handler: ({ params }) => {
      const { layout } = door.entry(params.assistant_id);
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
    handler: ({ params }) => {
      const { manifest } = door.entry(params.assistant_id);
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
