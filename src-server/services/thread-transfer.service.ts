import { randomUUID } from 'node:crypto';
import type { Access } from '../auth/access';
import type { AuditLog } from '../auth/audit-log';
import type { Principal } from '../auth/principal';
import { badRequest, conflict, forbidden, notFound } from '../contracts/errors';
import type { Thread } from '../contracts/runs';
import {
  THREAD_EXPORT_FORMAT,
  THREAD_EXPORT_LEFT_OUT,
  THREAD_EXPORT_VERSION,
  type ThreadExport,
} from '../contracts/thread-transfer';
import { LATEST_MIGRATION } from '../db/migrations';
import type { ImportRows, ThreadTransferRepository } from '../db/thread-transfer.repository';
import { getLogger } from '../log';
import type { ThreadsService } from './threads.service';

const log = getLogger('svc.api');

export interface ThreadTransferServiceDeps {
  access: Access;
  threads: Pick<ThreadsService, 'visible' | 'get'>;
  rows: ThreadTransferRepository;
  audit: AuditLog;
  /** The service's version, written in each export. */
  version: string;
}

/** A UUID wherever it stands in a text: an id of the document is replaced wherever it is named. */
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/** `text` with every id `ids` maps written as its new id. */
const remapped = (text: string, ids: ReadonlyMap<string, string>) =>
  text.replace(UUID, (id) => ids.get(id.toLowerCase()) ?? id);

/**
 * The document's rows with the thread's and the runs' ids replaced by new ones wherever they are named: the rows'
 * own columns and references (a decision's run, a tool call's id, a branch's `forked_from`), the stored events' texts,
 * the checkpoints' JSON and the values LangGraph stored as JSON (the `run_id` channel that ties a checkpoint to its
 * run). Checkpoint ids are a thread's own and stay; a decision gets a new id as it is written.
 */
function remapRows(doc: ThreadExport, ids: ReadonlyMap<string, string>): ImportRows {
  const { thread, runs, decisions, checkpoints } = doc;
  const { imported: _imported, ...fields } = thread;
  // Base64 holds no `-`: the values are rewritten one by one below, the rest of the document at once.
  const rows = JSON.parse(remapped(JSON.stringify({ thread: fields, runs, decisions, checkpoints }), ids)) as Omit<
    ImportRows,
    'decisions'
  > & { decisions: ThreadExport['decisions'] };
  const value = <T extends { type: string | null; blob: string | null }>(row: T): T => {
    if (row.type !== 'json' || row.blob === null) return row;
    const text = Buffer.from(row.blob, 'base64').toString('utf8');
    const changed = remapped(text, ids);
    return changed === text ? row : { ...row, blob: Buffer.from(changed, 'utf8').toString('base64') };
  };
  return {
    ...rows,
    decisions: rows.decisions.map((d) => ({ ...d, id: null })),
    checkpoints: {
      checkpoints: rows.checkpoints.checkpoints,
      blobs: rows.checkpoints.blobs.map(value),
      writes: rows.checkpoints.writes.map((w) => value(w)),
    },
  };
}

/** What the schema cannot say of a document: each id once, and each decision at one of its runs (400 otherwise). */
function checkDocument(doc: ThreadExport): void {
  const problems: { field: string; message: string }[] = [];
  const runs = new Set<string>();
  doc.runs.forEach((run, i) => {
    const id = run.id.toLowerCase();
    if (runs.has(id)) problems.push({ field: `runs.${i}.id`, message: `run ${run.id} is in the document twice` });
    runs.add(id);
  });
  const decisions = new Set<string>();
  doc.decisions.forEach((decision, i) => {
    if (!runs.has(decision.run_id.toLowerCase())) {
      problems.push({
        field: `decisions.${i}.run_id`,
        message: `run ${decision.run_id} is none of the document's runs`,
      });
    }
    if (decisions.has(decision.id)) {
      problems.push({ field: `decisions.${i}.id`, message: `decision ${decision.id} is in the document twice` });
    }
    decisions.add(decision.id);
  });
  if (problems.length) {
    throw badRequest(
      `invalid request body: ${problems.map((p) => `${p.field}: ${p.message}`).join('; ')}; nothing was imported`,
      { fields: problems },
    );
  }
}

/**
 * A thread as one JSON document, and that document imported into another installation as read-only history
 * (docs/http-api.md#export-and-import-of-a-thread): a new thread of the project whose runs, events, decisions, node
 * rows and checkpoints are the document's, under new ids, where no run is ever started, resumed, decided or forked.
 */
export function threadTransferService(deps: ThreadTransferServiceDeps) {
  const { access, threads, rows } = deps;

  return {
    /** The thread, its runs, their events, decisions, tool calls and checkpoints: for whoever may read the thread. */
    async exportThread(principal: Principal, threadId: string): Promise<ThreadExport> {
      const thread = await threads.visible(principal, threadId, 'viewer');
      const records = await rows.read(thread.id);
      if (!records) throw notFound(`thread ${threadId} not found`);
      log.info(`thread ${thread.id} exported by ${principal.name}: ${records.runs.length} run(s)`);
      return {
        format: THREAD_EXPORT_FORMAT,
        version: THREAD_EXPORT_VERSION,
        exported_at: new Date().toISOString(),
        service_version: deps.version,
        schema_migration: LATEST_MIGRATION,
        left_out: [...THREAD_EXPORT_LEFT_OUT],
        ...records,
      };
    },

    /**
     * Imports an exported thread into the project, in one transaction, by a member of it. `keepIds` (instance
     * administrators only): the thread, its runs and decisions keep the document's ids, and an id taken here already
     * is a 409; otherwise each gets a new one, every reference to it following.
     */
    async importThread(
      principal: Principal,
      projectId: string,
      doc: ThreadExport,
      options: { keepIds: boolean },
    ): Promise<Thread> {
      await access.requireProjectRole(principal, projectId, 'member', `project ${projectId}`);
      if (options.keepIds && !principal.instanceAdmin) {
        throw forbidden('keep_ids=true is for instance administrators: leave it out, and the import gets new ids');
      }
      checkDocument(doc);
      let imported: ImportRows;
      let threadId: string;
      if (options.keepIds) {
        const { imported: _imported, ...thread } = doc.thread;
        imported = { ...doc, thread };
        threadId = doc.thread.id;
      } else {
        threadId = randomUUID();
        const ids = new Map<string, string>([[doc.thread.id.toLowerCase(), threadId]]);
        for (const run of doc.runs) ids.set(run.id.toLowerCase(), randomUUID());
        imported = remapRows(doc, ids);
      }
      const outcome = await rows.write(
        imported,
        {
          projectId,
          createdBy: principal.id,
          from: { threadId: doc.thread.id, exportedAt: doc.exported_at },
        },
        options.keepIds,
      );
      if (outcome.outcome === 'taken') {
        throw conflict(
          `keep_ids=true: ${outcome.taken.join(', ')} already exist${outcome.taken.length > 1 ? '' : 's'} here; ` +
            'nothing was imported (leave keep_ids out to import it under new ids)',
        );
      }
      if (outcome.outcome === 'refused') {
        throw badRequest(`the document cannot be imported: ${outcome.detail}; nothing was imported`);
      }
      await deps.audit.record(principal, {
        action: 'thread.imported',
        projectId,
        target: `thread ${threadId}`,
        after: {
          thread_id: threadId,
          from_thread_id: doc.thread.id,
          exported_at: doc.exported_at,
          service_version: doc.service_version,
          runs: doc.runs.length,
          decisions: doc.decisions.length,
          kept_ids: options.keepIds,
        },
      });
      log.info(
        `thread ${threadId} imported from thread ${doc.thread.id} (exported ${doc.exported_at}) into project ` +
          `${projectId} by ${principal.name}: ${doc.runs.length} run(s), ${doc.decisions.length} decision(s)`,
      );
      return threads.get(principal, threadId);
    },
  };
}

export type ThreadTransferService = ReturnType<typeof threadTransferService>;
