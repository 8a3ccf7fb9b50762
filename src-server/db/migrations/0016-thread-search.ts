import type { Migration } from './migration';

/**
 * What thread search reads (GET /threads?q=, docs/http-api.md#searching-threads): each run's message and final output,
 * and each thread's name, as PostgreSQL full-text documents (the `simple` configuration: words as written, lower
 * case, no stemming, so that a name, an identifier or a word of any language is found as it is). Expression indexes,
 * so no table is rewritten; built CONCURRENTLY, so runs go on while a large history is indexed. A long text is indexed
 * on its first 100,000 characters: a document past PostgreSQL's limit of a full-text value would refuse the row.
 */
export const RUN_SEARCH_DOCUMENT =
  "to_tsvector('simple', left(coalesce(message, ''), 100000) || ' ' || left(coalesce(output, ''), 100000))";
export const THREAD_SEARCH_DOCUMENT = "to_tsvector('simple', left(coalesce(name, ''), 1000))";

const INDEXES = [
  { name: 'svc_runs_search', table: 'svc_runs', document: RUN_SEARCH_DOCUMENT },
  { name: 'svc_threads_search', table: 'svc_threads', document: THREAD_SEARCH_DOCUMENT },
];

export const threadSearch: Migration = {
  name: '0016_thread_search',
  // Indexes only: the release before neither needs nor minds them.
  compatible: true,
  transaction: false,
  async up(client) {
    for (const index of INDEXES) {
      // A build that stopped half-way leaves an invalid index, which IF NOT EXISTS would keep: it is built again.
      const { rows } = await client.query<{ valid: boolean }>(
        `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = $1`,
        [index.name],
      );
      if (rows[0] && !rows[0].valid) await client.query(`DROP INDEX CONCURRENTLY IF EXISTS ${index.name}`);
      await client.query(
        `CREATE INDEX CONCURRENTLY IF NOT EXISTS ${index.name} ON ${index.table} USING gin ((${index.document}))`,
      );
    }
  },
};
