import { z } from 'zod';
import {
  AgentDetailSchema,
  AgentValidationSchema,
  AgentVersionDetailSchema,
  AgentVersionSchema,
  SaveAgentRequestSchema,
  ShareAgentRequestSchema,
  TryAgentRequestSchema,
  ValidateAgentRequestSchema,
} from '../contracts/agents';
import { UuidSchema } from '../contracts/common';
import { runAccepted, RunAcceptedSchema } from '../contracts/runs';
import type { AgentsService } from '../services/agents.service';
import type { Api } from './api';

const NameParams = z.object({ agent: z.string().min(1).max(200) });
const VersionParams = NameParams.extend({ version: z.coerce.number().int().min(1).max(1_000_000) });
/** Which project's offer a name is looked up in, when the caller sees several agents of that name. */
const NameQuery = z.object({
  project_id: UuidSchema.optional().meta({
    description: 'the project whose agents (its own and those shared with its organisation) the name is looked up in',
  }),
});
const ProjectParams = z.object({ id: UuidSchema });

const INVALID_SOURCE =
  'the source has problems: `details.problems` lists each with its line and field; nothing was saved (invalid_request)';
const NOT_VISIBLE = 'no agent or command of that name among those the caller may see (not_found)';
const AMBIGUOUS = 'several agents of that name are in projects the caller sees: name one with project_id (conflict)';

/** Agents and commands people write: their text, its versions, a check of a draft, a try of it. */
export function agentRoutes(api: Api, agents: AgentsService): void {
  const tag = 'assets';
  api.route({
    method: 'post',
    path: '/agents/validate',
    operationId: 'validateAgent',
    tag,
    summary: "Check an agent's source without saving it: every problem at its line and field, or the graph it runs",
    body: ValidateAgentRequestSchema,
    responses: { 200: { description: 'the problems, or the graph', schema: AgentValidationSchema } },
    handler: ({ body }) => agents.validate(body.source),
  });

  api.route({
    method: 'post',
    path: '/projects/{id}/agents',
    operationId: 'createAgent',
    tag,
    summary: "Store a new agent or command in the project, as its version 1 (the project's owners)",
    params: ProjectParams,
    body: SaveAgentRequestSchema,
    errors: {
      400: INVALID_SOURCE,
      403: 'needs the owner role on the project (forbidden)',
      409: 'a built-in or another agent of the organisation has the name (conflict)',
    },
    responses: { 201: { description: 'the agent at version 1', schema: AgentDetailSchema } },
    handler: ({ params, body, ctx }) => agents.create(ctx.principal, params.id, body),
  });

  api.route({
    method: 'post',
    path: '/projects/{id}/agents/try',
    operationId: 'tryAgent',
    tag,
    summary: 'Run an unsaved source on a message, as a draft run in a new thread; follow it with streamRun',
    params: ProjectParams,
    body: TryAgentRequestSchema,
    errors: { 400: INVALID_SOURCE, 403: 'needs the owner role on the project (forbidden)' },
    responses: { 200: { description: 'the draft run', schema: RunAcceptedSchema } },
    handler: async ({ params, body, ctx }) => {
      const run = await agents.try(ctx.principal, params.id, body);
      return runAccepted(run, run.status, 0);
    },
  });

  api.route({
    method: 'get',
    path: '/agents/{agent}',
    operationId: 'getAgent',
    tag,
    summary: 'An agent or command with its current source and version',
    params: NameParams,
    query: NameQuery,
    errors: { 404: NOT_VISIBLE, 409: AMBIGUOUS },
    responses: { 200: { description: 'the agent', schema: AgentDetailSchema } },
    handler: ({ params, query, ctx }) => agents.get(ctx.principal, params.agent, query.project_id),
  });

  api.route({
    method: 'put',
    path: '/agents/{agent}',
    operationId: 'updateAgent',
    tag,
    summary:
      "Save a new version of a stored agent and make it current (its project's owners); runs already going keep theirs",
    params: NameParams,
    query: NameQuery,
    body: SaveAgentRequestSchema,
    errors: {
      400: `${INVALID_SOURCE}; or the source names another agent`,
      403: "needs the owner role on the agent's project (forbidden)",
      404: NOT_VISIBLE,
      409: `a built-in is read-only; or ${AMBIGUOUS}`,
    },
    responses: { 200: { description: 'the agent at its new version', schema: AgentDetailSchema } },
    handler: ({ params, query, body, ctx }) => agents.update(ctx.principal, params.agent, body, query.project_id),
  });

  api.route({
    method: 'delete',
    path: '/agents/{agent}',
    operationId: 'deleteAgent',
    tag,
    summary: 'Delete a stored agent: its runs stay readable, its schedules pause saying why',
    params: NameParams,
    query: NameQuery,
    errors: {
      403: "needs the owner role on the agent's project (forbidden)",
      404: NOT_VISIBLE,
      409: `a built-in cannot be deleted; or ${AMBIGUOUS}`,
    },
    responses: { 204: { description: 'deleted' } },
    handler: async ({ params, query, ctx }) => {
      await agents.remove(ctx.principal, params.agent, query.project_id);
    },
  });

  api.route({
    method: 'put',
    path: '/agents/{agent}/shared',
    operationId: 'shareAgent',
    tag,
    summary: "Offer a stored agent to every project of its organisation, or only its own (the organisation's admins)",
    params: NameParams,
    query: NameQuery,
    body: ShareAgentRequestSchema,
    errors: {
      403: "needs the admin role on the agent's organisation (forbidden)",
      404: NOT_VISIBLE,
      409: `a built-in is offered everywhere already; or ${AMBIGUOUS}`,
    },
    responses: { 200: { description: 'the agent', schema: AgentDetailSchema } },
    handler: ({ params, query, body, ctx }) => agents.share(ctx.principal, params.agent, body.shared, query.project_id),
  });

  api.route({
    method: 'get',
    path: '/agents/{agent}/versions',
    operationId: 'listAgentVersions',
    tag,
    summary: "A stored agent's versions, newest first, with who saved each and why (empty for a built-in)",
    params: NameParams,
    query: NameQuery,
    errors: { 404: NOT_VISIBLE, 409: AMBIGUOUS },
    responses: { 200: { description: 'the versions', schema: z.array(AgentVersionSchema) } },
    handler: ({ params, query, ctx }) => agents.versions(ctx.principal, params.agent, query.project_id),
  });

  api.route({
    method: 'get',
    path: '/agents/{agent}/versions/{version}',
    operationId: 'getAgentVersion',
    tag,
    summary: 'One version of a stored agent, with its source',
    params: VersionParams,
    query: NameQuery,
    errors: { 404: `${NOT_VISIBLE}; or no such version`, 409: AMBIGUOUS },
    responses: { 200: { description: 'the version', schema: AgentVersionDetailSchema } },
    handler: ({ params, query, ctx }) => agents.version(ctx.principal, params.agent, params.version, query.project_id),
  });

  api.route({
    method: 'post',
    path: '/agents/{agent}/versions/{version}/restore',
    operationId: 'restoreAgentVersion',
    tag,
    summary: 'Make an earlier version current again, as a new version with its text',
    params: VersionParams,
    query: NameQuery,
    errors: {
      400: "the version's source no longer passes today's rules (a server it names is no longer registered)",
      403: "needs the owner role on the agent's project (forbidden)",
      404: `${NOT_VISIBLE}; or no such version`,
      409: `a built-in has no versions to restore; or ${AMBIGUOUS}`,
    },
    responses: { 200: { description: 'the agent at its new version', schema: AgentDetailSchema } },
    handler: ({ params, query, ctx }) => agents.restore(ctx.principal, params.agent, params.version, query.project_id),
  });
}
