import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { loadCatalog, DEFAULT_GENERATED_DIR } from './assets/catalog';
import { createAccess, ensureBuiltInPrincipals } from './auth/access';
import { createAuthenticator } from './auth/authenticator';
import { personalTokensService } from './auth/personal-tokens.service';
import { mcpOauthService } from './auth/mcp-oauth.service';
import { oauthRepository } from './db/oauth.repository';
import { MCP_PATH } from './http/mcp/mcp.router';
import { createOidc } from './auth/oidc';
import { tenancyService } from './auth/tenancy.service';
import { tenancyRepository } from './db/tenancy.repository';
import { usersRepository } from './db/users.repository';
import { personalTokensRepository } from './db/personal-tokens.repository';
import { baseUrl, type Config } from './config';
import { dataDirMode, ensureFolderMode } from './db/data-dir';
import { startEmbeddedDatabase, type EmbeddedDatabase } from './db/embedded';
import { connectionShortfall, createPool, isDatabaseUnavailable, withAdvisoryLock, type Pool } from './db/pool';
import { sweepOrphanedRuns } from './db/runs.repository';
import { CHECKPOINT_SCHEMA, CheckpointSaver } from './db/checkpointer';
import { initDb, MIGRATION_LOCK_KEY } from './db/migrate';
import { threadsRepository } from './db/threads.repository';
import { lgThreadsRepository } from './db/lg-threads.repository';
import { runsRepository } from './db/runs.repository';
import { runNodesRepository } from './db/run-nodes.repository';
import { gateDecisionsRepository } from './db/gate-decisions.repository';
import { nodeConfigsRepository } from './db/node-configs.repository';
import { addAcceptors, type Acceptors } from './http/acceptors';
import { createApp } from './http/app';
import { buildProjectContext, withProjectFolder } from './context/project-context';
import { toolCallsRepository } from './db/tool-calls.repository';
import { comparedRunsRepository } from './db/compared-runs.repository';
import { datasetsRepository } from './db/datasets.repository';
import { experimentsRepository } from './db/experiments.repository';
import { toolQuestionsRepository } from './db/tool-questions.repository';
import { toolGrantsRepository } from './db/tool-grants.repository';
import { orgFoldersRepository } from './db/org-folders.repository';
import { orgToolPoliciesRepository } from './db/org-tool-policies.repository';
import { mcpServersRepository } from './db/mcp-servers.repository';
import { mcpSessionsRepository } from './db/mcp-sessions.repository';
import { mcpTasksRepository } from './db/mcp-tasks.repository';
import { instanceSettingsRepository } from './db/instance-settings.repository';
import { modelPullsRepository } from './db/model-pulls.repository';
import { retentionRepository } from './db/retention.repository';
import { RetentionJanitor } from './services/retention-janitor';
import { retentionService } from './services/retention.service';
import { DefaultModel } from './services/default-model';
import { localModelsService } from './services/local-models.service';
import { McpServers } from './tools/mcp-servers';
import { probeStdioSandbox, stdioServersOf } from './tools/mcp-stdio-sandbox';
import { createToolbox } from './tools/toolbox';
import { LocalQueue } from './models/local-queue';
import { assertModelConfigured } from './models/cloud-providers';
import { createModelProviders } from './models/model-providers';
import { parseModel } from './models/model-ref';
import { PriceTable } from './models/model-prices';
import { localRuntimeStatus } from './models/model-catalog';
import { observeModelCalls } from './models/observed-model-client';
import { addressSecrets } from './models/runtime-address';
import { llmQueueRepository } from './db/llm-queue.repository';
import { runEventsRepository } from './db/run-events.repository';
import { listenForRunNotifications } from './db/run-notifications';
import { webhooksRepository } from './db/webhooks.repository';
import { modelCallsRepository } from './db/model-calls.repository';
import { runWritesRepository } from './db/run-writes.repository';
import { idempotencyKeysRepository } from './db/idempotency-keys.repository';
import { metricsRepository } from './db/metrics.repository';
import { ModelLabels } from './metrics/model-labels';
import { ServiceMetrics } from './metrics/service-metrics';
import { WebhookDelivery } from './webhooks/webhook-delivery';
import { webhooksService } from './webhooks/webhooks.service';
import { Engine } from './engine';
import { phaseConfigService } from './services/phase-config.service';
import { AgentDirectory } from './services/agent-directory';
import { agentsService } from './services/agents.service';
import { agentsRepository } from './db/agents.repository';
import { projectFoldersService } from './services/project-folders.service';
import { orgToolPoliciesService } from './services/org-tool-policies.service';
import { mcpRegistryService } from './services/mcp-registry.service';
import { mcpSessionsService } from './services/mcp-sessions.service';
import { healthService } from './services/health.service';
import { idempotencyService } from './services/idempotency.service';
import { usersService } from './services/users.service';
import { runsService } from './services/runs.service';
import { comparisonsService } from './services/comparisons.service';
import { auditService } from './services/audit.service';
import { budgetsService } from './services/budgets.service';
import { secretsService } from './services/secrets.service';
import { auditRepository } from './db/audit.repository';
import { budgetsRepository } from './db/budgets.repository';
import { secretsRepository } from './db/secrets.repository';
import { usageService } from './services/usage.service';
import { approvalsService } from './services/approvals.service';
import { threadsService } from './services/threads.service';
import { threadTransferService } from './services/thread-transfer.service';
import { threadTransferRepository } from './db/thread-transfer.repository';
import { lgThreadsService } from './services/lg-threads.service';
import { schedulesService } from './services/schedules.service';
import { Scheduler } from './services/scheduler';
import { datasetsService } from './services/datasets.service';
import { experimentDriver, ExperimentRunner } from './services/experiment-runner';
import { experimentsService } from './services/experiments.service';
import { slackService } from './services/slack.service';
import { emailService } from './services/email.service';
import { emailRepository } from './db/email.repository';
import { StopDeliveryWorker } from './services/stop-delivery-worker';
import { slackRepository } from './db/slack.repository';
import { stopDeliveriesRepository } from './db/stop-deliveries.repository';
import { openSecretBox } from './secrets/secret-box';
import { slackWebApi } from './slack/slack-web-api';
import { schedulesRepository } from './db/schedules.repository';
import { getLogger, printUnmasked, registerSecret, setLogLevel } from './log';
import { otlpHeaderSecrets, startTracing } from './tracing/tracing-sdk';
import { errorMessage } from './contracts/errors';
import { PERSONAL_TOKENS_MAX } from './contracts/auth';
// The desktop app reaches the server's code through this file only (dependency-cruiser: desktop-starts-the-server).
export {
  backup,
  restore,
  type BackupDone,
  type BackupOptions,
  type RestoreDone,
  type RestoreOptions,
} from './db/backup';

const log = getLogger('svc.api');
/** How often each process drives the running experiments a step: an item's run starts within a second of its turn. */
const EXPERIMENTS_POLL_S = 1;

export class StartupError extends Error {
  override name = 'StartupError';
}

export interface StartOptions {
  config: Config;
  /** Where the build script wrote manifests and layouts. */
  generatedDir?: string;
  /** Started by the desktop app for its one user, whose per-launch token it passes as SVC_API_TOKEN. */
  desktop?: boolean;
}

export interface RunningServer {
  url: string;
  port: number;
  /** The per-launch API token when one was generated (auth on, nothing else configured). */
  apiToken?: string;
  /** Studio link to open: carries the per-launch token in the URL fragment when there is one. */
  studioUrl: string;
  pool: Pool;
  close(): Promise<void>;
}

/** The package's folder and version, found upward: this file runs from src-server/, or bundled from out/server. */
function ownPackage(): { root: string; version: string } | null {
  for (let dir = import.meta.dirname; ; dir = path.dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'agent-workflow-service' && pkg.version) return { root: dir, version: pkg.version };
    } catch {
      // not here: look one folder up
    }
    if (path.dirname(dir) === dir) return null;
  }
}

const version = ownPackage()?.version ?? '0.0.0';

/**
 * The composition root every mode calls (npm start, npm run serve, the desktop app):
 * config → database → checkpointer → init_db → orphan sweep → app → listen.
 */
export async function startServer({
  config,
  generatedDir = config.GENERATED_DIR ?? DEFAULT_GENERATED_DIR,
  desktop = false,
}: StartOptions): Promise<RunningServer> {
  setLogLevel(config.LOG_LEVEL);
  const oidcOn = config.AUTH_ENABLED && Boolean(config.OIDC_ISSUER_URL);
  if (oidcOn && !config.OIDC_REDIRECT_URI && (config.HOST === '0.0.0.0' || config.HOST === '::')) {
    // A wildcard address is no name a browser can be sent back to.
    throw new StartupError(
      `OIDC_REDIRECT_URI is required when HOST is ${config.HOST}: set it to the callback URL browsers reach, e.g. https://agents.example.com/auth/callback`,
    );
  }
  for (const secret of [
    config.CLOUD_A_API_KEY,
    config.CLOUD_B_API_KEY,
    config.CLOUD_C_API_KEY,
    config.OIDC_CLIENT_SECRET,
    config.METRICS_TOKEN,
    config.SECRETS_KEY,
    config.SECRETS_KEY_PREVIOUS,
    ...addressSecrets(config.LOCAL_LLM_BASE),
    ...otlpHeaderSecrets(process.env),
  ]) {
    registerSecret(secret);
  }
  // Before anything writes a span: the engine's, the webhooks' and the tools' (tracing/run-trace.ts).
  const tracing = await startTracing(process.env, version);

  let embedded: EmbeddedDatabase | undefined;
  let pool: Pool | undefined;
  let leasePool: Pool | undefined;
  let stopRuns: (() => Promise<void>) | undefined;
  const cleanup = async () => {
    await stopRuns?.();
    await tracing?.shutdown();
    await pool?.end().catch(() => undefined);
    await leasePool?.end().catch(() => undefined);
    await embedded?.stop().catch(() => undefined);
  };

  try {
    let databaseUrl = config.DATABASE_URL;
    if (!databaseUrl) {
      embedded = await startEmbeddedDatabase(config.DATA_DIR, config.EMBEDDED_PG_PORT);
      databaseUrl = embedded.url;
    }
    // Private folders, also when they were made by an older version: DATA_DIR and the clone cache.
    await ensureFolderMode(config.DATA_DIR, dataDirMode(), { create: false });
    await ensureFolderMode(path.join(config.DATA_DIR, 'repositories'), 0o700, { create: false });
    registerSecret(safePassword(databaseUrl));
    pool = createPool(databaseUrl, config.DATABASE_POOL_MAX);
    // The runs' leases on a connection of their own: renewed on time however long the work waits for the pool.
    leasePool = createPool(databaseUrl, 1);

    // 1. connect and set up the checkpointer
    const checkpointer = new CheckpointSaver(pool, { schema: CHECKPOINT_SCHEMA, waitS: config.DATABASE_WAIT_S });
    try {
      await withAdvisoryLock(pool, MIGRATION_LOCK_KEY, () => checkpointer.setup());
    } catch (error) {
      throw new StartupError(`checkpointer setup failed: ${errorMessage(error)}`);
    }
    // 2. init_db()
    await initDb(pool);
    const shortfall = await connectionShortfall(pool, config.DATABASE_POOL_MAX + 2);
    if (shortfall) log.warn(shortfall);
    const tenancyRows = tenancyRepository(pool);
    // 3. orphan sweep
    const swept = await sweepOrphanedRuns(pool);
    if (swept > 0) log.warn(`closed ${swept} orphaned run(s) older than 1 hour as error`);

    const catalog = loadCatalog(generatedDir);
    const users = usersRepository(pool);
    await ensureBuiltInPrincipals(users);
    const personalTokenRows = personalTokensRepository(pool);
    // The address this server is known by: PUBLIC_URL, else the one the identity provider sends people back to (by
    // default the address it listens on, known once it listens). Never a request's Host, which a caller chooses.
    let listeningUrl = '';
    const publicBase = () =>
      (
        config.PUBLIC_URL ?? (config.OIDC_REDIRECT_URI ? new URL(config.OIDC_REDIRECT_URI).origin : listeningUrl)
      ).replace(/\/+$/, '');
    const access = createAccess(tenancyRows);
    const auditLog = auditService({ audit: auditRepository(pool), access });
    const oauthRows = oauthRepository(pool);
    const mcpGrants = mcpOauthService({
      rows: oauthRows,
      resource: () => `${publicBase()}${MCP_PATH}`,
      audit: auditLog,
    });
    const auth = createAuthenticator(config, users, personalTokenRows, mcpGrants);
    // The key of the secrets the service keeps (Slack's tokens, project secrets): SECRETS_KEY, or one generated in
    // DATA_DIR.
    const secretBox = await openSecretBox(config);
    const secrets = secretsService({ access, secrets: secretsRepository(pool), box: secretBox, audit: auditLog });
    const budgets = budgetsService({ access, budgets: budgetsRepository(pool), audit: auditLog });
    const runs = runsRepository(pool, leasePool);
    const gates = gateDecisionsRepository(pool);
    const agentRows = agentsRepository(pool);
    const agents = new AgentDirectory(catalog, agentRows, access);
    await agents.load();
    const phaseConfig = phaseConfigService({
      agents,
      access,
      configs: nodeConfigsRepository(pool),
      audit: auditLog,
    });
    // This process, as the owner of the runs it executes and of its local-runtime queue tickets.
    const owner = `${process.pid}-${randomUUID()}`;
    const queue = new LocalQueue(llmQueueRepository(pool, config.DATABASE_WAIT_S), {
      slots: config.LOCAL_LLM_MAX_CONCURRENT,
      timeoutS: config.LOCAL_LLM_QUEUE_TIMEOUT_S,
      owner,
      leaseS: config.RUN_LEASE_S,
    });
    const projectContextOptions = {
      cacheDir: path.join(config.DATA_DIR, 'repositories'),
      allowedRoots: config.PROJECT_ROOTS,
      allowedGitHosts: config.GIT_ALLOWED_HOSTS,
      maxCacheBytes: config.GIT_CACHE_MAX_MB * 1024 * 1024,
      refreshMs: config.GIT_REFRESH_S * 1000,
      // The context shares the local budget with the instructions and the conversation.
      maxChars: Math.floor(config.LOCAL_LLM_MAX_CONTEXT_TOKENS * 4 * 0.5),
    };
    // Who may name which project path is decided by the caller, and where by the project's organisation, whenever
    // a path is used; where a run reads and writes, by the organisation again.
    const projectFolders = projectFoldersService({
      access,
      folders: orgFoldersRepository(pool),
      pathOptions: projectContextOptions,
      authEnabled: config.AUTH_ENABLED,
    });
    const checkPath = projectFolders.checkPath;
    // Shared: people sign in (OIDC or a fixed SVC_API_TOKEN), rather than the one person of a per-launch token.
    const shared = config.AUTH_ENABLED && !auth.generatedToken && !desktop;
    const stdioServers = stdioServersOf(await probeStdioSandbox(process.env), shared);
    const toolPolicyFloors = orgToolPoliciesRepository(pool);
    const toolbox = createToolbox({
      mcp: new McpServers({
        env: process.env,
        // A declared variable: the project's secret, else its organisation's, else the service's environment.
        variables: (projectId, names) => secrets.variables(projectId, names, process.env),
        idleMs: config.MCP_IDLE_S * 1000,
        callTimeoutMs: config.TOOL_CALL_TIMEOUT_S * 1000,
        allowedPrivateHosts: config.MCP_ALLOWED_HOSTS,
        // A shipped asset names a published server by its program (mcp-server-filesystem): the service's own.
        binDirs: [path.join(ownPackage()?.root ?? process.cwd(), 'node_modules', '.bin')],
        stdio: stdioServers,
      }),
      projectFolder: async ({ projectPath, projectId }, use) =>
        withProjectFolder(projectPath, projectContextOptions, use, await projectFolders.tenantFolders(projectId)),
      policyFloor: (projectId) => toolPolicyFloors.ofProject(projectId),
      callTimeoutMs: config.TOOL_CALL_TIMEOUT_S * 1000,
    });
    const runEvents = runEventsRepository(pool);
    const idempotencyKeys = idempotencyKeysRepository(pool);
    // Only with METRICS_TOKEN: without it nothing is measured, and the run's path is as it was.
    const clusterFigures = metricsRepository(pool);
    const metrics = config.METRICS_TOKEN
      ? new ServiceMetrics(
          {
            agents: () => [...catalog.list('agent'), ...catalog.list('command')].map((manifest) => manifest.name),
            cluster: () => clusterFigures.clusterFigures(),
            queue: () => queue.status(),
            load: (): Engine['load'] => engine.load,
          },
          new ModelLabels(config.DEFAULT_MODEL, async () => {
            const local = await localRuntimeStatus(config, { showAddress: false });
            if (!local.reachable) throw new Error(local.error ?? 'the local runtime does not answer');
            return local.models;
          }),
        )
      : undefined;
    const models = createModelProviders(config, queue);
    const observedModels = metrics ? observeModelCalls(models, metrics) : models;
    const runWrites = runWritesRepository(pool);
    const prices = PriceTable.fromConfig(config);
    const modelCalls = modelCallsRepository(pool);
    const usage = usageService({ access, calls: modelCalls });
    const comparedRuns = comparedRunsRepository(pool);
    const toolQuestions = toolQuestionsRepository(pool);
    const engine = new Engine({
      owner,
      runs,
      events: runEvents,
      nodes: runNodesRepository(pool),
      checkpointer,
      models: observedModels,
      slots: {
        reserve: (run) => {
          if (parseModel(run.model).provider === 'local') queue.reserve(run.id, run.projectId);
        },
        letGo: (runId) => queue.letGo(runId),
      },
      toolbox,
      toolCalls: toolCallsRepository(pool),
      comparedRuns,
      questions: toolQuestions,
      questionExpiryS: config.TOOL_QUESTION_EXPIRY_S,
      records: runWrites,
      prices,
      budgets: budgets.guard,
      // Runs started before versions name their built-in only.
      agentOf: (run) =>
        run.manifestHash ? agents.pinnedEntry(run.manifestHash) : Promise.resolve(catalog.get(run.agent)),
      projectContext: async ({ projectPath, projectId }, signal) =>
        buildProjectContext(
          projectPath,
          { ...projectContextOptions, signal },
          await projectFolders.tenantFolders(projectId),
        ),
      nodeConfigs: (agent, projectId) => phaseConfig.forRun(agent, projectId),
      isTransient: isDatabaseUnavailable,
      runTimeoutS: config.RUN_TIMEOUT_S,
      leaseS: config.RUN_LEASE_S,
      maxAttempts: config.RUN_MAX_ATTEMPTS,
      maxActive: config.RUN_MAX_ACTIVE,
      databaseWaitS: config.DATABASE_WAIT_S,
      pollMs: 1000,
      log: getLogger('svc.engine'),
      failures: getLogger('svc.sse'),
      observer: metrics,
      traceContent: config.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT,
    });
    const slackRows = slackRepository(pool);
    const stopDeliveries = stopDeliveriesRepository(pool);
    // The sender of the webhook outbox, which the database's triggers fill (docs/webhooks.md).
    const webhookRows = webhooksRepository(pool);
    const delivery = new WebhookDelivery(webhookRows, {
      owner,
      timeoutS: config.WEBHOOK_TIMEOUT_S,
      maxAttempts: config.WEBHOOK_MAX_ATTEMPTS,
      retryBaseS: config.WEBHOOK_RETRY_BASE_S,
      tenantLimits: { perOrg: config.WEBHOOK_ORG_CONCURRENCY, perProject: config.WEBHOOK_PROJECT_CONCURRENCY },
      allowPrivateUrls: config.WEBHOOK_ALLOW_PRIVATE_URLS,
      retentionDays: config.WEBHOOK_RETENTION_DAYS,
      userAgent: `agent-workflow-service/${version}`,
      observer: metrics,
    });
    // Slack's messages of stops, from an outbox the triggers fill as the webhooks' (docs/approvals.md#slack).
    let stopMessages: StopDeliveryWorker | undefined;
    const notifications = await listenForRunNotifications(databaseUrl, {
      cancelled: (runId) => engine.cancelled(runId),
      runReady: (threadId) => void engine.startQueued(threadId),
      eventsStored: (runId, seq) => engine.events.stored(runId, seq),
      queueChanged: (granted) => queue.changed(granted),
      webhooksQueued: () => {
        delivery.wake();
        stopMessages?.wake();
      },
      agentChanged: (agentId) => void agents.changed(agentId),
      reconnected: () => {
        engine.events.catchUp();
        delivery.wake();
        stopMessages?.wake();
        agents.reload().catch((error: Error) => log.warn(`reading the stored agents failed: ${error.message}`));
      },
    });
    // Retention of projects' threads and checkpoints (docs/retention.md): one pass per interval across the cluster.
    const retentionRows = retentionRepository(pool);
    const janitor = new RetentionJanitor(retentionRows, {
      owner,
      intervalS: config.RETENTION_INTERVAL_S,
      pruneAfterHours: config.RETENTION_PRUNE_AFTER_HOURS,
      log: getLogger('svc.retention'),
    });
    engine.supervise();
    delivery.start();
    janitor.start();
    const pruneEvents = setInterval(() => {
      idempotencyKeys
        .prune()
        .catch((error) => log.warn(`pruning Idempotency-Key answers failed: ${errorMessage(error)}`));
      slackRows.pruneSeen().catch((error) => log.warn(`pruning Slack signatures failed: ${errorMessage(error)}`));
      if (config.RUN_EVENTS_RETENTION_DAYS === 0) return;
      runEvents
        .prune(config.RUN_EVENTS_RETENTION_DAYS)
        .then((n) => n > 0 && log.info(`dropped ${n} stored events of runs finished over retention`))
        .catch((error) => log.warn(`pruning stored run events failed: ${errorMessage(error)}`));
    }, 3600_000);
    pruneEvents.unref();
    let scheduler: Scheduler | undefined;
    let experimentRunner: ExperimentRunner | undefined;
    stopRuns = async () => {
      clearInterval(pruneEvents);
      // The scheduler first: no fire starts a run on an engine that is shutting down.
      await scheduler?.close();
      await experimentRunner?.close();
      await janitor.stop();
      defaultModel.stop();
      localModels.stop();
      await engine.shutdown();
      await toolbox.close();
      await delivery.close();
      await stopMessages?.close();
      await notifications.close();
      await queue.close();
    };
    const defaultModel = new DefaultModel(config.DEFAULT_MODEL, instanceSettingsRepository(pool));
    await defaultModel.start();
    const modelPulls = modelPullsRepository(pool);
    const localModels = localModelsService({
      config,
      pulls: modelPulls,
      speeds: () => modelPulls.speeds(),
      defaultModel,
      checkModel: (model) => assertModelConfigured(config, model),
    });
    const threadRows = threadsRepository(pool);
    const threads = threadsService({
      agents,
      access,
      threads: threadRows,
      runs,
      engine,
      deleteCheckpoints: (threadId) => checkpointer.deleteThread(threadId),
      checkProjectPath: checkPath,
    });
    const service = runsService({
      agents,
      access,
      threads,
      runs,
      gates,
      notices: stopDeliveries,
      questions: toolQuestions,
      engine,
      usage,
      defaultModel: () => defaultModel.current(),
      checkModel: (model) => assertModelConfigured(config, model),
      maxLocalRunsPerUser: config.LOCAL_LLM_MAX_RUNS_PER_USER,
      budgets,
      localRetryAfterS: async () => {
        const status = await queue.status();
        return ((status.average_call_s ?? 20) * Math.max(1, status.waiting)) / status.slots;
      },
      checkProjectPath: checkPath,
    });
    const schedules = schedulesService({
      access,
      agents,
      schedules: schedulesRepository(pool),
      tenancy: tenancyRows,
      users,
      threads,
      runs: service,
      rules: { allowSeconds: config.SCHEDULES_ALLOW_SECONDS },
      checkModel: (model) => assertModelConfigured(config, model),
      checkProjectPath: checkPath,
      authEnabled: config.AUTH_ENABLED,
      apiTokenAdmin: Boolean(config.SVC_API_TOKEN ?? auth.generatedToken),
      process: owner,
      missedAfterS: Math.max(10, 3 * config.SCHEDULES_POLL_S),
      fireLeaseS: Math.max(10, 3 * config.SCHEDULES_POLL_S),
      limits: { perUser: config.SCHEDULES_MAX_PER_USER, perProject: config.SCHEDULES_MAX_PER_PROJECT },
      minIntervalS: { member: config.SCHEDULES_MEMBER_MIN_INTERVAL_S, owner: config.SCHEDULES_OWNER_MIN_INTERVAL_S },
      audit: auditLog,
    });
    scheduler = new Scheduler(schedules, config.SCHEDULES_POLL_S);
    const comparisons = comparisonsService({ access, runs, compared: comparedRuns, usage, agents });
    const datasetRows = datasetsRepository(pool);
    const datasets = datasetsService({
      access,
      datasets: datasetRows,
      runs,
      compared: comparedRuns,
      audit: auditLog,
    });
    const experimentRows = experimentsRepository(pool);
    const experiments = experimentsService({
      access,
      usage,
      datasets,
      datasetRows,
      experiments: experimentRows,
      runsService: service,
      checkModel: (model) => assertModelConfigured(config, model),
    });
    experimentRunner = new ExperimentRunner(
      experimentDriver({
        experiments: experimentRows,
        runs,
        runsService: service,
        comparisons,
        calls: modelCalls,
        access,
        users,
        models: observedModels,
        records: runWrites,
        prices,
      }),
      EXPERIMENTS_POLL_S,
    );
    const oidc =
      config.AUTH_ENABLED && config.OIDC_ISSUER_URL
        ? createOidc({
            issuer: config.OIDC_ISSUER_URL,
            clientId: config.OIDC_CLIENT_ID,
            clientSecret: config.OIDC_CLIENT_SECRET,
            redirectUri: () => config.OIDC_REDIRECT_URI ?? `${listeningUrl}/auth/callback`,
          })
        : undefined;
    const tenancy = tenancyService({ access, tenancy: tenancyRows, users, audit: auditLog });
    const approvals = approvalsService({
      agents,
      access,
      threads,
      runs,
      gates,
      grants: toolGrantsRepository(pool),
      notices: stopDeliveries,
      questions: toolQuestions,
      engine,
      audit: auditLog,
    });
    const slack = slackService({
      access,
      slack: slackRows,
      deliveries: stopDeliveries,
      gates,
      approvals,
      box: secretBox,
      api: slackWebApi(config.SLACK_API_URL),
      questions: toolQuestions,
      publicUrl: config.PUBLIC_URL ?? null,
      audit: auditLog,
    });
    const email = emailService({
      access,
      email: emailRepository(pool),
      settings: instanceSettingsRepository(pool),
      deliveries: stopDeliveries,
      gates,
      users,
      approvals,
      questions: toolQuestions,
      box: secretBox,
      publicUrl: config.PUBLIC_URL ?? null,
      allowPrivate: config.WEBHOOK_ALLOW_PRIVATE_URLS,
      audit: auditLog,
    });
    // The stops' outbox: Slack's messages follow a stop; a mail goes once, when it starts waiting.
    stopMessages = new StopDeliveryWorker(
      stopDeliveries,
      (delivery) => (delivery.via === 'slack' ? slack.sync(delivery) : email.deliver(delivery)),
      owner,
    );
    slack
      .resealStale()
      .then((n) => n > 0 && log.info(`sealed the secrets of ${n} Slack connection(s) again with the current key`))
      .catch((error) => log.warn(`sealing Slack's secrets again failed: ${errorMessage(error)}`));
    const lgRows = lgThreadsRepository(pool);
    const registeredServers = mcpServersRepository(pool);
    const app = createApp({
      config,
      version,
      stdioMcpServers: stdioServers.mode,
      health: healthService({ pool }),
      agents,
      agentsService: agentsService({
        agents,
        rows: agentRows,
        access,
        registry: () => registeredServers.all(),
        layouts: catalog.layouts,
        runs: service,
        audit: auditLog,
      }),
      auth,
      runsService: service,
      threadsService: threads,
      threadTransfer: threadTransferService({
        access,
        threads,
        rows: threadTransferRepository(pool),
        audit: auditLog,
        version,
      }),
      approvals,
      slack,
      email,
      phaseConfig,
      access,
      queue,
      localModels,
      tenancy,
      projectFolders,
      orgToolPolicies: orgToolPoliciesService({ access, floors: toolPolicyFloors, audit: auditLog }),
      mcpRegistry: mcpRegistryService({ servers: registeredServers }),
      users: usersService({ users }),
      mcpGrants,
      mcpOauth: oidc
        ? { service: mcpGrants, issuer: publicBase, resource: () => `${publicBase()}${MCP_PATH}` }
        : undefined,
      personalTokens: personalTokensService({
        tokens: personalTokenRows,
        authEnabled: config.AUTH_ENABLED,
        max: PERSONAL_TOKENS_MAX,
        audit: auditLog,
      }),
      schedules,
      webhooks: webhooksService({
        access,
        webhooks: webhookRows,
        allowPrivateUrls: config.WEBHOOK_ALLOW_PRIVATE_URLS,
        maxPerScope: config.WEBHOOK_MAX_PER_SCOPE,
        audit: auditLog,
      }),
      retention: retentionService({ access, retention: retentionRows, audit: auditLog }),
      usage,
      budgets,
      secrets,
      audit: auditLog,
      comparisons,
      datasets,
      experiments,
      idempotencyKeys: idempotencyService({ keys: idempotencyKeys }),
      mcpSessions: mcpSessionsService({ sessions: mcpSessionsRepository(pool), tasks: mcpTasksRepository(pool) }),
      lgThreads: lgThreadsService({ access, threads, rows: lgRows }),
      oidc,
      metrics,
    });

    const server = await listen(app, config);
    // More handles accept on the socket, in the background: a burst of connections is not let in one per loop turn.
    const acceptors = addAcceptors(server);
    // Once the server answers: a run a schedule starts can be followed at once.
    scheduler.start();
    experimentRunner.start();
    stopMessages.start();
    const port = (server.address() as AddressInfo).port;
    const url = baseUrl(config, port);
    listeningUrl = url;
    const studioUrl = auth.generatedToken ? `${url}/ui#token=${auth.generatedToken}` : `${url}/ui`;
    log.info(
      `agent workflow service ${version} listening on ${url} (database: ${embedded ? 'embedded' : 'DATABASE_URL'}, auth: ${config.AUTH_ENABLED ? 'on' : 'off'})`,
    );
    printUnmasked('svc.api', `studio: ${studioUrl}`);
    embedded?.announce(url);

    const openPool = pool;
    return {
      url,
      port,
      apiToken: auth.generatedToken,
      studioUrl,
      pool: openPool,
      close: async () => {
        // Live runs first, so their streams end and the server can close promptly.
        await stopRuns?.();
        stopRuns = undefined;
        await closeServer(server, await acceptors);
        await cleanup();
        log.info('stopped');
      },
    };
  } catch (error) {
    await cleanup();
    throw error;
  }
}

/**
 * An idle kept-alive connection is closed after this long: past the idle timeouts of the proxies in front (nginx's
 * upstream keepalive_timeout and cloud load balancers default to 60 s), so that a proxy never sends a request on a
 * connection this server is closing at that moment (Node's own 5 s made that race a 502 under load).
 */
const KEEP_ALIVE_MS = 65_000;

function listen(app: ReturnType<typeof createApp>, config: Config): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = app.listen(config.PORT, config.HOST);
    server.keepAliveTimeout = KEEP_ALIVE_MS;
    // Headers must be allowed to arrive on a connection kept that long.
    server.headersTimeout = KEEP_ALIVE_MS + 1_000;
    server.once('listening', () => resolve(server));
    server.once('error', (error: NodeJS.ErrnoException) => {
      reject(
        new StartupError(
          error.code === 'EADDRINUSE'
            ? `port ${config.PORT} on ${config.HOST} is already in use: set PORT to a free port`
            : `cannot listen on ${config.HOST}:${config.PORT}: ${error.message}`,
        ),
      );
    });
  });
}

/**
 * Stops accepting (on the server's own handle and its copies), lets in-flight requests end for up to 10 s, then cuts
 * what is left (e.g. SSE streams).
 */
async function closeServer(server: Server, acceptors: Acceptors): Promise<void> {
  const force = setTimeout(() => server.closeAllConnections(), 10_000);
  const closed = Promise.all([new Promise((resolve) => server.close(resolve)), acceptors.close()]);
  server.closeIdleConnections();
  await closed;
  clearTimeout(force);
}

function safePassword(url: string): string | undefined {
  try {
    return decodeURIComponent(new URL(url).password) || undefined;
  } catch {
    return undefined;
  }
}
