import { baseline } from './0001-baseline';
import { runHandovers } from './0002-run-handovers';
import { storedAgents } from './0003-stored-agents';
import { activeRunsByThread } from './0004-active-runs-by-thread';
import { agentsByName } from './0005-agents-by-name';
import { decisionStops } from './0006-decision-stops';
import { slack } from './0007-slack';
import { email } from './0008-email';
import { mcpTasks } from './0009-mcp-tasks';
import { toolQuestions } from './0010-tool-questions';
import { mcpOauth } from './0011-mcp-oauth';
import { questionDoors } from './0012-question-doors';
import { comparisons } from './0013-comparisons';
import { datasets } from './0014-datasets';
import { budgetsSecretsAudit } from './0015-budgets-secrets-audit';
import { threadSearch } from './0016-thread-search';
import { importedThreads } from './0017-imported-threads';
import { queueGroups } from './0018-queue-groups';
import type { Migration } from './migration';

export type { Migration } from './migration';

/** Every migration of the schema, in the order they apply. Append only. */
export const MIGRATIONS: readonly Migration[] = [
  baseline,
  runHandovers,
  storedAgents,
  activeRunsByThread,
  agentsByName,
  decisionStops,
  slack,
  email,
  mcpTasks,
  toolQuestions,
  mcpOauth,
  questionDoors,
  comparisons,
  datasets,
  budgetsSecretsAudit,
  threadSearch,
  importedThreads,
  queueGroups,
];

/** The newest schema this version knows: what GET /health reports once the database is at it. */
export const LATEST_MIGRATION = MIGRATIONS.at(-1)!.name;
