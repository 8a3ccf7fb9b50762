import type { Check, Dataset, DatasetItem } from '../contracts/datasets';
import type { ComparedRecord } from '../storage/types';
import { withTransaction, type Pool } from './pool';

interface DatasetRow {
  id: string;
  project_id: string;
  name: string;
  description: string | null;
  created_by_name: string;
  created_at: Date;
  item_count: number;
}

interface ItemRow {
  id: string;
  dataset_id: string;
  position: number;
  message: string;
  project_path: string | null;
  expected: string | null;
  checks: Check[];
  source_run_id: string | null;
  tool_calls: number;
  decisions: number;
  created_at: Date;
}

/** An item as an experiment copies it: its input, expected output and checks, and the run it was made from. */
export interface ItemToRun {
  id: string;
  position: number;
  message: string;
  project_path: string | null;
  expected: string | null;
  checks: Check[];
  source_run_id: string | null;
}

export interface NewItem {
  message: string;
  projectPath: string | null;
  expected: string | null;
  checks: Check[];
  sourceRunId: string | null;
  record: ComparedRecord;
}

const toDataset = (row: DatasetRow): Dataset => ({
  id: row.id,
  project_id: row.project_id,
  name: row.name,
  description: row.description,
  item_count: row.item_count,
  created_by: row.created_by_name,
  created_at: row.created_at.toISOString(),
});

const toItem = (row: ItemRow): DatasetItem => ({
  id: row.id,
  dataset_id: row.dataset_id,
  position: row.position,
  message: row.message,
  project_path: row.project_path,
  expected: row.expected,
  checks: row.checks,
  source_run_id: row.source_run_id,
  recorded: { tool_calls: row.tool_calls, decisions: row.decisions },
  created_at: row.created_at.toISOString(),
});

const SELECT_DATASET = `
  SELECT d.id, d.project_id, d.name, d.description, d.created_by_name, d.created_at,
         (SELECT count(*) FROM svc_dataset_items i WHERE i.dataset_id = d.id)::integer AS item_count
    FROM svc_datasets d`;

const ITEM_COLUMNS = `id, dataset_id, position, message, project_path, expected, checks, source_run_id, created_at,
  jsonb_array_length(record -> 'calls') AS tool_calls, jsonb_array_length(record -> 'decisions') AS decisions`;

/**
 * Datasets and their items (docs/compare.md#datasets-and-experiments). Items are copies, with the record of the run
 * they were made from: nothing here follows a run, and retention removes none of it.
 */
export function datasetsRepository(pool: Pool) {
  return {
    async create(d: {
      id: string;
      projectId: string;
      name: string;
      description: string | null;
      createdBy: string;
      createdByName: string;
    }): Promise<Dataset> {
      await pool.query(
        `INSERT INTO svc_datasets (id, project_id, name, description, created_by, created_by_name)
         VALUES ($1, $2, $3, $4, $5, $6)`,
        [d.id, d.projectId, d.name, d.description, d.createdBy, d.createdByName],
      );
      return (await this.get(d.id))!;
    },

    async get(id: string): Promise<Dataset | undefined> {
      const { rows } = await pool.query<DatasetRow>(`${SELECT_DATASET} WHERE d.id = $1`, [id]);
      return rows[0] && toDataset(rows[0]);
    },

    /** A project's datasets, newest first. */
    async ofProject(projectId: string): Promise<Dataset[]> {
      const { rows } = await pool.query<DatasetRow>(
        `${SELECT_DATASET} WHERE d.project_id = $1 ORDER BY d.created_at DESC, d.id`,
        [projectId],
      );
      return rows.map(toDataset);
    },

    async remove(id: string): Promise<boolean> {
      return ((await pool.query(`DELETE FROM svc_datasets WHERE id = $1`, [id])).rowCount ?? 0) > 0;
    },

    async items(datasetId: string): Promise<DatasetItem[]> {
      const { rows } = await pool.query<ItemRow>(
        `SELECT ${ITEM_COLUMNS} FROM svc_dataset_items WHERE dataset_id = $1 ORDER BY position`,
        [datasetId],
      );
      return rows.map(toItem);
    },

    /** The items an experiment copies, in order. */
    async itemsToRun(datasetId: string): Promise<ItemToRun[]> {
      const { rows } = await pool.query<ItemToRun>(
        `SELECT id, position, message, project_path, expected, checks, source_run_id FROM svc_dataset_items
          WHERE dataset_id = $1 ORDER BY position`,
        [datasetId],
      );
      return rows;
    },

    async item(datasetId: string, itemId: string): Promise<DatasetItem | undefined> {
      const { rows } = await pool.query<ItemRow>(
        `SELECT ${ITEM_COLUMNS} FROM svc_dataset_items WHERE dataset_id = $1 AND id = $2`,
        [datasetId, itemId],
      );
      return rows[0] && toItem(rows[0]);
    },

    /** Appends an item at the dataset's end (its position one past the last, under the dataset's row lock). */
    async addItem(datasetId: string, id: string, item: NewItem): Promise<DatasetItem | undefined> {
      const added = await withTransaction(pool, async (client) => {
        const locked = await client.query(`SELECT 1 FROM svc_datasets WHERE id = $1 FOR UPDATE`, [datasetId]);
        if (!locked.rowCount) return false;
        await client.query(
          `INSERT INTO svc_dataset_items (id, dataset_id, position, message, project_path, expected, checks,
                                          source_run_id, record)
           SELECT $1, $2, COALESCE(max(position), 0) + 1, $3, $4, $5, $6, $7, $8
             FROM svc_dataset_items WHERE dataset_id = $2`,
          [
            id,
            datasetId,
            item.message,
            item.projectPath,
            item.expected,
            JSON.stringify(item.checks),
            item.sourceRunId,
            JSON.stringify(item.record),
          ],
        );
        return true;
      });
      return added ? this.item(datasetId, id) : undefined;
    },

    async updateItem(
      datasetId: string,
      itemId: string,
      change: { message?: string; expected?: string | null; checks?: Check[] },
    ): Promise<DatasetItem | undefined> {
      const { rowCount } = await pool.query(
        `UPDATE svc_dataset_items
            SET message = COALESCE($3, message),
                expected = CASE WHEN $4 THEN $5 ELSE expected END,
                checks = COALESCE($6::jsonb, checks)
          WHERE dataset_id = $1 AND id = $2`,
        [
          datasetId,
          itemId,
          change.message ?? null,
          change.expected !== undefined,
          change.expected ?? null,
          change.checks ? JSON.stringify(change.checks) : null,
        ],
      );
      return rowCount ? this.item(datasetId, itemId) : undefined;
    },

    async removeItem(datasetId: string, itemId: string): Promise<boolean> {
      const { rowCount } = await pool.query(`DELETE FROM svc_dataset_items WHERE dataset_id = $1 AND id = $2`, [
        datasetId,
        itemId,
      ]);
      return (rowCount ?? 0) > 0;
    },
  };
}

export type DatasetsRepository = ReturnType<typeof datasetsRepository>;
