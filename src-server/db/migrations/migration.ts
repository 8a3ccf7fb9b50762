import type { PoolClient } from 'pg';

/**
 * One numbered change of the database schema (docs/upgrading.md). Applied once per database, in the order of
 * migrations/index.ts, and recorded in svc_schema_migrations. Shipped migrations are never edited.
 */
export interface Migration {
  /** `NNNN_what_it_does`: the number orders the list, and the name is what the database records. */
  name: string;
  /**
   * True when the release before keeps working on the schema after it (an expand step: a new table, a nullable
   * column, a new function, a new form of a function beside the old one). A process that does not know a migration
   * starts on a database holding it only when it is compatible; a contract step (a column dropped, an old form of a
   * function removed) is not, and comes a release after the expand step it finishes.
   */
  compatible: boolean;
  /**
   * False for a migration that PostgreSQL cannot run inside a transaction (CREATE INDEX CONCURRENTLY). Each of its
   * statements must then be safe to run again: a process that stops half-way runs it again at its next start.
   */
  transaction?: boolean;
  up(client: PoolClient): Promise<void>;
}
