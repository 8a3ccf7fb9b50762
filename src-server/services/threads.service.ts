import { randomUUID } from 'node:crypto';
import type { CatalogEntry } from '../assets/catalog';
import type { Access } from '../auth/access';
import type { Principal } from '../auth/principal';
import { notFound } from '../contracts/errors';
import type { Checkpoint, CreateThread, RenameThread, Thread, ThreadPage } from '../contracts/runs';
import type { RunsRepository } from '../db/runs.repository';
import type { ThreadFilter, ThreadsRepository } from '../db/threads.repository';
import type { Engine } from '../engine';
import { getLogger } from '../log';
import { listThreads } from './thread-pages';
import type { AgentDirectory } from './agent-directory';
import { decodeCursor } from './thread-cursor';

const log = getLogger('svc.api');

export interface ThreadsServiceDeps {
  agents: Pick<AgentDirectory, 'forProject'>;
  access: Access;
  threads: ThreadsRepository;
  runs: RunsRepository;
  engine: Engine;
  deleteCheckpoints(threadId: string): Promise<void>;
  /** Throws (400) when the caller may not give a thread this project path. */
  checkProjectPath(principal: Principal, projectPath: string, projectId: string): Promise<void>;
}

/** Threads: listing, creating, reading and deleting them, with the caller's role checked on the thread's project. */
export function threadsService(deps: ThreadsServiceDeps) {
  const { access, threads, runs, engine, agents } = deps;

  /** A thread the caller may see at `role`; another tenant's thread is 404, so it does not leak. */
  async function visibleThread(
    principal: Principal,
    id: string,
    role: 'viewer' | 'member' = 'viewer',
  ): Promise<Thread> {
    const thread = await threads.get(id);
    if (!thread) throw notFound(`thread ${id} not found`);
    await access.requireProjectRole(principal, thread.project_id, role, `thread ${id}`);
    return thread;
  }

  async function entryOf(thread: Thread): Promise<CatalogEntry> {
    const agent = await agents.forProject(thread.project_id, thread.agent);
    if (!agent) throw notFound(`no agent or command named "${thread.agent}" is loaded to read thread ${thread.id}`);
    return agent.entry;
  }

  /** One checkpoint of a thread the caller may already see; 404 when the thread has none with that id. */
  async function checkpointOf(thread: Thread, checkpointId: string): Promise<Checkpoint> {
    const checkpoint = await engine.checkpoint(await entryOf(thread), thread.id, checkpointId);
    if (!checkpoint) throw notFound(`checkpoint ${checkpointId} not found on thread ${thread.id}`);
    return checkpoint;
  }

  return {
    visible: visibleThread,
    checkpointOf,

    /** The thread's history: the checkpoints of its runs and branches, oldest first (the newest `limit`). */
    async checkpoints(principal: Principal, threadId: string, limit?: number): Promise<Checkpoint[]> {
      const thread = await visibleThread(principal, threadId);
      return engine.history(await entryOf(thread), thread.id, limit);
    },

    async runs(principal: Principal, threadId: string) {
      const thread = await visibleThread(principal, threadId);
      return (await runs.listByThread(thread.id)).map(
        ({
          routes: _r,
          pending_gate: _g,
          event_seq: _s,
          project_id: _p,
          forked_from: _f,
          manifest_hash: _h,
          comparison_of: _c,
          ...run
        }) => run,
      );
    },

    /** `drafts`: with the threads the studio tried unsaved agents in, which are left out otherwise. */
    async list(
      principal: Principal,
      limit: number,
      cursor?: string,
      projectId?: string,
      drafts = false,
      filter: ThreadFilter = {},
    ): Promise<ThreadPage> {
      if (projectId) await access.requireProjectRole(principal, projectId, 'viewer', `project ${projectId}`);
      const projects = projectId ? [projectId] : await access.visibleProjectIds(principal);
      return listThreads(threads, projects, limit, cursor ? decodeCursor(cursor) : undefined, drafts, filter);
    },

    async create(principal: Principal, body: CreateThread): Promise<Thread> {
      const projectId = await access.resolveProject(principal, body.project_id, 'member');
      const agent = await agents.forProject(projectId, body.agent);
      if (!agent) throw notFound(`no agent or command named "${body.agent}"`);
      const entry = agent.entry;
      if (body.project_path) await deps.checkProjectPath(principal, body.project_path, projectId);
      return threads.insert({
        id: randomUUID(),
        agent: entry.manifest.name,
        model: body.model ?? null,
        projectPath: body.project_path ?? null,
        projectId,
        createdBy: principal.id,
      });
    },

    async get(principal: Principal, id: string): Promise<Thread> {
      return visibleThread(principal, id);
    },

    /** A person's name for the thread, in place of its first message; runs never change it. */
    async rename(principal: Principal, id: string, body: RenameThread): Promise<Thread> {
      const thread = await visibleThread(principal, id, 'member');
      await threads.rename(thread.id, body.name);
      return { ...thread, name: body.name };
    },

    async delete(principal: Principal, id: string): Promise<void> {
      const thread = await visibleThread(principal, id, 'member');
      for (const run of await runs.listByThread(thread.id)) {
        // Queued runs too: their followers hear run_cancelled before the thread goes.
        if (run.status === 'queued' || run.status === 'running' || run.status === 'waiting_approval') {
          await engine.cancel(run.id, null);
        }
      }
      await deps.deleteCheckpoints(thread.id);
      await threads.delete(thread.id);
      log.info(`thread ${thread.id} deleted by ${principal.name}`);
    },
  };
}

export type ThreadsService = ReturnType<typeof threadsService>;
