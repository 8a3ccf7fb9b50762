import type { Authenticator } from '../auth/authenticator';
import type { Config } from '../config';
import type { Access } from '../auth/access';
import type { Oidc } from '../auth/oidc';
import type { PersonalTokensService } from '../auth/personal-tokens.service';
import type { McpOauthService } from '../auth/mcp-oauth.service';
import type { TenancyService } from '../auth/tenancy.service';
import type { HealthService } from '../services/health.service';
import type { IdempotencyService } from '../services/idempotency.service';
import type { McpSessionsService } from '../services/mcp-sessions.service';
import type { UsersService } from '../services/users.service';
import type { LocalQueue } from '../models/local-queue';
import type { ServiceMetrics } from '../metrics/service-metrics';
import type { PhaseConfigService } from '../services/phase-config.service';
import type { AgentDirectory } from '../services/agent-directory';
import type { AgentsService } from '../services/agents.service';
import type { ProjectFoldersService } from '../services/project-folders.service';
import type { SlackService } from '../services/slack.service';
import type { EmailService } from '../services/email.service';
import type { OrgToolPoliciesService } from '../services/org-tool-policies.service';
import type { McpRegistryService } from '../services/mcp-registry.service';
import type { RetentionService } from '../services/retention.service';
import type { ApprovalsService } from '../services/approvals.service';
import type { RunsService } from '../services/runs.service';
import type { ThreadsService } from '../services/threads.service';
import type { ThreadTransferService } from '../services/thread-transfer.service';
import type { LocalModelsService } from '../services/local-models.service';
import type { AuditService } from '../services/audit.service';
import type { BudgetsService } from '../services/budgets.service';
import type { SecretsService } from '../services/secrets.service';
import type { UsageService } from '../services/usage.service';
import type { ComparisonsService } from '../services/comparisons.service';
import type { DatasetsService } from '../services/datasets.service';
import type { ExperimentsService } from '../services/experiments.service';
import type { WebhooksService } from '../webhooks/webhooks.service';
import type { SchedulesService } from '../services/schedules.service';
import type { LgThreadsService } from '../services/lg-threads.service';
import type { Health } from '../contracts/health';

/** The authorization server of /mcp, on a server that signs people in with OIDC (docs/mcp.md#signing-in-with-oauth). */
export interface McpOauthServer {
  service: McpOauthService;
  /** PUBLIC_URL, else the address OIDC sends people back to: never a request's Host. */
  issuer(): string;
  /** The resource its tokens are for: `<issuer>/mcp`. */
  resource(): string;
}

/** What the routers are built from: the services and settings main.ts composes. */
export interface AppDeps {
  config: Config;
  version: string;
  /** How this server runs stdio MCP servers (tools/mcp-stdio-sandbox.ts), which /health tells the studio. */
  stdioMcpServers: Health['stdio_mcp_servers'];
  /** What /health reads of the database. */
  health: HealthService;
  /** Every agent and command: the built-ins and those stored in projects. */
  agents: AgentDirectory;
  agentsService: AgentsService;
  auth: Authenticator;
  runsService: RunsService;
  threadsService: ThreadsService;
  /** A thread exported as one document, and imported as read-only history. */
  threadTransfer: ThreadTransferService;
  approvals: ApprovalsService;
  phaseConfig: PhaseConfigService;
  access: Access;
  queue: LocalQueue;
  localModels: LocalModelsService;
  tenancy: TenancyService;
  /** The folders under PROJECT_ROOTS of each organisation. */
  projectFolders: ProjectFoldersService;
  /** Each organisation's floor of tool policies. */
  orgToolPolicies: OrgToolPoliciesService;
  slack: SlackService;
  email: EmailService;
  /** The instance's registry of MCP servers, which stored agents name. */
  mcpRegistry: McpRegistryService;
  users: UsersService;
  personalTokens: PersonalTokensService;
  /** The MCP clients people signed in with OAuth: listed and revoked in Settings. */
  mcpGrants: McpOauthService;
  mcpOauth?: McpOauthServer;
  webhooks: WebhooksService;
  retention: RetentionService;
  schedules: SchedulesService;
  usage: UsageService;
  budgets: BudgetsService;
  secrets: SecretsService;
  audit: AuditService;
  /** Comparisons read beside the runs they compare (docs/compare.md). */
  comparisons: ComparisonsService;
  /** Datasets and the experiments that run them (docs/compare.md#datasets-and-experiments). */
  datasets: DatasetsService;
  experiments: ExperimentsService;
  idempotencyKeys: IdempotencyService;
  mcpSessions: McpSessionsService;
  /** The LangGraph API's threads (drafts and metadata), and what it reads of runs to answer (http/langgraph/). */
  lgThreads: LgThreadsService;
  oidc?: Oidc;
  /** This server's metrics, when METRICS_TOKEN is set (GET /metrics, and the run streams it counts). */
  metrics?: ServiceMetrics;
}
