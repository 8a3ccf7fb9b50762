import {
  AgentDetailSchema,
  AgentValidationSchema,
  AgentVersionDetailSchema,
  AgentVersionSchema,
  SourceProblemSchema,
  type SaveAgentRequest,
  type SourceProblem,
  type TryAgentRequest,
} from '@contracts/agents';
import { AssetSummarySchema } from '@contracts/assets';
import { RunAcceptedSchema } from '@contracts/runs';
import { z } from 'zod';
import { ApiError, api } from './http';

/** `/agents/<name>`, looked up in the project's offer (its own agents and those shared with it). */
const one = (name: string, projectId: string | null, rest = '') =>
  `/agents/${encodeURIComponent(name)}${rest}${projectId ? `?project_id=${encodeURIComponent(projectId)}` : ''}`;
const offer = (projectId: string | null) => (projectId ? `?project_id=${encodeURIComponent(projectId)}` : '');
const projectAgents = (projectId: string) => `/projects/${encodeURIComponent(projectId)}/agents`;

/** Agents and commands people write: their source, its check, its versions, a try of a draft (docs/agents.md). */
export const agentsApi = {
  /** The built-in agents and commands and those the project has (its own and its organisation's shared ones). */
  list: (projectId: string | null) =>
    Promise.all([
      api(`/agents${offer(projectId)}`, { schema: z.array(AssetSummarySchema) }),
      api(`/commands${offer(projectId)}`, { schema: z.array(AssetSummarySchema) }),
    ]),
  get: (name: string, projectId: string | null) => api(one(name, projectId), { schema: AgentDetailSchema }),
  validate: (source: string, signal?: AbortSignal) =>
    api('/agents/validate', { method: 'POST', body: { source }, signal, schema: AgentValidationSchema }),
  create: (projectId: string, body: SaveAgentRequest) =>
    api(projectAgents(projectId), { method: 'POST', body, schema: AgentDetailSchema }),
  update: (name: string, projectId: string | null, body: SaveAgentRequest) =>
    api(one(name, projectId), { method: 'PUT', body, schema: AgentDetailSchema }),
  remove: (name: string, projectId: string | null) => api<void>(one(name, projectId), { method: 'DELETE' }),
  versions: (name: string, projectId: string | null) =>
    api(one(name, projectId, '/versions'), { schema: z.array(AgentVersionSchema) }),
  version: (name: string, version: number, projectId: string | null) =>
    api(one(name, projectId, `/versions/${version}`), { schema: AgentVersionDetailSchema }),
  restore: (name: string, version: number, projectId: string | null) =>
    api(one(name, projectId, `/versions/${version}/restore`), { method: 'POST', schema: AgentDetailSchema }),
  /** Starts a draft run of an unsaved source; it is followed as any run, by its id. */
  tryDraft: (projectId: string, body: TryAgentRequest) =>
    api(`${projectAgents(projectId)}/try`, { method: 'POST', body, schema: RunAcceptedSchema }),
};

/** The problems a refused source has at its lines (a 400's `details.problems`), or null for any other error. */
export function sourceProblemsOf(error: unknown): SourceProblem[] | null {
  if (!(error instanceof ApiError) || error.status !== 400) return null;
  const parsed = z.object({ problems: z.array(SourceProblemSchema) }).safeParse(error.details);
  return parsed.success ? parsed.data.problems : null;
}
