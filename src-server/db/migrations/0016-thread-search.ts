import type { Migration } from './migration';

/**
 * What thread search reads (GET /threads?q=, docs/http-api.md#searching-threads): each run's message and final output,
 * and each thread's name, as PostgreSQL full-text documents (the `simple` configuration: words as written, lower
 * case, no stemming, so that a name, an identifier or a word of any language is found as it is). Expression indexes,
 * so no table is rewritten. They are built in the migration's transaction, which holds writes to the two tables for
 * as long as it builds: CREATE INDEX CONCURRENTLY would wait for the other processes of a
 * cluster, which wait for this migration's lock, and deadlock. A long text is indexed on its first 100,000 characters:
 * a document past PostgreSQL's limit of a full-text value would refuse the row.
 */
export const RUN_SEARCH_DOCUMENT =
  "to_tsvector('simple', left(coalesce(message, ''), 100000) || ' ' || left(coalesce(output, ''), 100000))";
export const THREAD_SEARCH_DOCUMENT = "to_tsvector('simple', left(coalesce(name, ''), 1000))";

export const threadSearch: Migration = {
  name: '0016_thread_search',
  // Indexes only: the release before neither needs nor minds them.
  compatible: true,
  async up(client) {
    await client.query(`CREATE INDEX IF NOT EXISTS svc_runs_search ON svc_runs USING gin ((${RUN_SEARCH_DOCUMENT}))`);
    await client.query(
      `CREATE INDEX IF NOT EXISTS svc_threads_search ON svc_threads USING gin ((${THREAD_SEARCH_DOCUMENT}))`,
    );
  },
};
