import { randomUUID } from 'node:crypto';
import type { Access } from '../auth/access';
import type { Principal } from '../auth/principal';
import { conflict, notFound } from '../contracts/errors';
import type { LgThreadsRepository } from '../db/lg-threads.repository';
import { getLogger } from '../log';
import type { LgRunRow, LgThreadFilter, LgThreadQuery, LgThreadRow } from '../storage/lg-threads';
import type { ThreadsService } from './threads.service';

const log = getLogger('svc.api');

/**
 * Threads as the LangGraph API sees them (docs/langgraph-api.md): its clients create a thread before they name the
 * agent that runs in it, so a thread is a draft until its first run, and both carry metadata those clients search by.
 * Access is the service's own: the role on the thread's project, another tenant's thread is not found.
 */
export function lgThreadsService(deps: { access: Access; threads: ThreadsService; rows: LgThreadsRepository }) {
  const { access, rows } = deps;

  async function visible(principal: Principal, id: string, role: 'viewer' | 'member' = 'viewer'): Promise<LgThreadRow> {
    const row = await rows.get(id);
    if (!row) throw notFound(`thread ${id} not found`);
    await access.requireProjectRole(principal, row.project_id, role, `thread ${id}`);
    return row;
  }

  return {
    visible,

    /**
     * A draft in the caller's project (the default-project rule of every new thread). `ifExists`: an id of a thread the
     * caller may see answers 409 (`raise`, the default), or that thread as it is (`do_nothing`). An id of a thread the
     * caller may not see is not found, as on every other route: "already exists" would tell that it is someone's.
     */
    async create(
      principal: Principal,
      request: { id?: string; metadata: Record<string, unknown>; ifExists?: 'raise' | 'do_nothing' },
    ): Promise<LgThreadRow> {
      const projectId = await access.resolveProject(principal, undefined, 'member');
      const id = request.id ?? randomUUID();
      const created = await rows.insertDraft({ id, projectId, createdBy: principal.id, metadata: request.metadata });
      if (!created) {
        const existing = await visible(principal, id);
        if (request.ifExists === 'do_nothing') return existing;
        throw conflict(`thread ${id} already exists`);
      }
      return (await rows.get(id))!;
    },

    async search(
      principal: Principal,
      query: Omit<LgThreadQuery, 'projectIds'>,
    ): Promise<{ threads: LgThreadRow[]; total: number }> {
      const projectIds = await access.visibleProjectIds(principal);
      const [threads, total] = await Promise.all([
        rows.search({ ...query, projectIds }),
        rows.count({ ...query, projectIds }),
      ]);
      return { threads, total };
    },

    /** How many threads a search finds, the same filter as `search`'s total. */
    async count(principal: Principal, filter: LgThreadFilter): Promise<number> {
      return rows.count({ ...filter, projectIds: await access.visibleProjectIds(principal) });
    },

    async patch(principal: Principal, id: string, metadata: Record<string, unknown>): Promise<LgThreadRow> {
      await visible(principal, id, 'member');
      await rows.mergeMetadata(id, metadata);
      return (await rows.get(id))!;
    },

    async delete(principal: Principal, id: string): Promise<void> {
      const row = await visible(principal, id, 'member');
      if (row.agent === null) {
        await rows.deleteDraft(id);
        log.info(`thread ${id} (a draft) deleted by ${principal.name}`);
      } else await deps.threads.delete(principal, id);
    },

    /** The draft's first run has made it a thread of its agent: its metadata moves there. */
    settled: (id: string) => rows.settleDraft(id),

    /** A thread or a draft by id, whatever its project: for a caller that has checked access (`visible`). */
    get: (id: string): Promise<LgThreadRow | undefined> => rows.get(id),

    /** The threads' runs, oldest first, each with its phases' outputs; the caller has checked access to the threads. */
    runs: (threadIds: string[]): Promise<LgRunRow[]> => rows.runs(threadIds),

    /** The event ids each run stopped with (a gate or a tool call), oldest first: the ids of its interrupts. */
    stopSeqs: (runIds: string[]): Promise<Map<string, number[]>> => rows.stopSeqs(runIds),

    /** The stream modes and metadata a run was started with. */
    recordRun: (runId: string, streamMode: string[], metadata: Record<string, unknown>): Promise<void> =>
      rows.recordRun(runId, streamMode, metadata),
  };
}

export type LgThreadsService = ReturnType<typeof lgThreadsService>;
