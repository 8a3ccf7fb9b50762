import fs from 'node:fs';
import { BlockList, isIP } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { ModelPricesSchema, type ModelPrices } from './contracts/usage';

/**
 * The documented placeholder default of SESSION_SECRET (docs/configuration.md#variables). It is never used to sign
 * anything: when it is left in place the server signs with a random per-process secret instead.
 */
export const INSECURE_SESSION_SECRET = 'change-me-insecure-session-secret';

const boolean = z
  .string()
  .trim()
  .toLowerCase()
  .refine((v) => ['true', 'false', '1', '0', 'yes', 'no', 'on', 'off'].includes(v), {
    message: 'expected true or false',
  })
  .transform((v) => ['true', '1', 'yes', 'on'].includes(v));

const int = (min: number, max = Number.MAX_SAFE_INTEGER) => z.coerce.number().int().min(min).max(max);
const positive = z.coerce.number().positive();
const url = z.string().trim().url();
const list = z.string().transform((v) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);

/** A price table's JSON text, checked entry by entry: a wrong one names the entry and the field. */
const priceTable = (source: (value: string) => string) =>
  z.string().transform((value, ctx): ModelPrices => {
    let parsed: unknown;
    try {
      const text = source(value);
      try {
        parsed = JSON.parse(text);
      } catch (error) {
        throw new Error(`not JSON: ${(error as Error).message}`, { cause: error });
      }
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: (error as Error).message });
      return z.NEVER;
    }
    const checked = ModelPricesSchema.safeParse(parsed);
    if (checked.success) return checked.data;
    for (const issue of checked.error.issues) ctx.addIssue({ ...issue, code: 'custom' });
    return z.NEVER;
  });

function readPriceFile(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (error) {
    throw new Error(`cannot read ${file}: ${(error as Error).message}`, { cause: error });
  }
}

const schema = z.object({
  HOST: z.string().trim().min(1).default('127.0.0.1'),
  PORT: int(0, 65535).default(8000),
  /** Where the embedded database and other local state live. */
  DATA_DIR: z.string().trim().min(1).default(defaultDataDir()),
  DATABASE_URL: url.optional(),
  /** Where the build script wrote manifests and layouts (default: the project's generated/). */
  GENERATED_DIR: z.string().trim().min(1).optional(),
  EMBEDDED_PG_PORT: int(1, 65535).default(54329),

  LOCAL_LLM_BASE: url.default('http://127.0.0.1:11434'),
  LOCAL_LLM_MAX_CONCURRENT: int(1, 1024).default(2),
  LOCAL_LLM_QUEUE_TIMEOUT_S: positive.default(300),
  LOCAL_LLM_MAX_CONTEXT_TOKENS: int(256).default(6000),
  /**
   * Room for the answer (reasoning included) on top of the prompt budget: a local call's context window
   * (`num_ctx`) is the budget plus this, capped at the model's own context length, and its `num_predict` is this.
   */
  LOCAL_LLM_MAX_ANSWER_TOKENS: int(64).default(2048),
  /**
   * Whether a thinking model is asked for its reasoning apart (`think`): `auto` asks the models that can think
   * (the studio shows the reasoning, the phase output is the answer alone), `off` asks them not to think, and
   * `runtime` sends nothing, leaving the runtime's default.
   */
  LOCAL_LLM_THINK: z.enum(['auto', 'off', 'runtime']).default('auto'),
  /**
   * Runs on the local runtime one user may have going at once, across the cluster; more answer 429 with
   * Retry-After, so that one member cannot fill the queue that every tenant shares.
   */
  LOCAL_LLM_MAX_RUNS_PER_USER: int(1).default(20),
  /** The model a run uses when neither the request nor its thread names one. */
  DEFAULT_MODEL: z.string().trim().min(1).default('llama3.2'),

  CLOUD_A_API_KEY: z.string().optional(),
  CLOUD_B_API_KEY: z.string().optional(),
  CLOUD_C_API_KEY: z.string().optional(),
  CLOUD_A_BASE_URL: url.optional(),
  CLOUD_B_BASE_URL: url.optional(),
  CLOUD_C_BASE_URL: url.optional(),
  /**
   * A model call that fails for a passing reason before it streamed anything (a 429 or 5xx, a connection reset or
   * refused) is tried again up to this many times (docs/run-lifecycle.md#retries-of-model-calls), waiting at most
   * MODEL_RETRY_MAX_WAIT_S before each try: longer than that, a provider's Retry-After is not waited for.
   */
  MODEL_RETRIES: int(0, 10).default(3),
  MODEL_RETRY_MAX_WAIT_S: int(1, 600).default(30),

  /**
   * Prices of models for the usage accounting (docs/observability.md#accounting), as JSON: a model string or a
   * provider → `{ "input_per_mtok": …, "output_per_mtok": … }` in USD per million tokens. Never fetched from anywhere.
   */
  MODEL_PRICES: priceTable((value) => value).default({}),
  /** The same table in a JSON file, read once at start; MODEL_PRICES's entries win over the file's. */
  MODEL_PRICES_FILE: priceTable(readPriceFile).default({}),

  AUTH_ENABLED: boolean.default(true),
  OIDC_ISSUER_URL: url.optional(),
  OIDC_CLIENT_ID: z.string().trim().min(1).default('svc'),
  OIDC_CLIENT_SECRET: z.string().optional(),
  OIDC_REDIRECT_URI: url.optional(),
  SESSION_SECRET: z.string().min(1).default(INSECURE_SESSION_SECRET),
  SESSION_TTL_S: int(60).default(86400),
  SVC_API_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  /**
   * The bearer token that opens GET /metrics, and nothing else (docs/observability.md). Unset: the server serves no
   * metrics and measures nothing for them.
   */
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  CORS_ORIGINS: list.default([]),
  /**
   * Requests a minute per token on the API, /lg and /mcp, and per client address on the doors without a token (sign-in,
   * Slack's clicks, mail links), in each process's memory (docs/operations.md#rate-limits). Unset: 1,200 and 120 with
   * authentication on, none with it off; 0: none.
   */
  RATE_LIMIT_PER_MINUTE: int(0).optional(),
  RATE_LIMIT_ADDRESS_PER_MINUTE: int(0).optional(),
  /**
   * The proxies whose X-Forwarded-* headers are believed (for the client's address and whether it came over TLS):
   * Express's names `loopback`, `linklocal` and `uniquelocal`, addresses, and subnets such as 10.0.0.0/8.
   */
  TRUST_PROXY: list
    .pipe(
      z.array(z.string().refine(isProxyAddress, 'expected loopback, linklocal, uniquelocal, an address or a subnet')),
    )
    .default(['loopback']),

  RUN_TIMEOUT_S: positive.default(600),
  /**
   * A run's executing process renews a lease on it; once the lease has lapsed (its process died), another
   * process takes the run over. The default takes a dead process's runs over within about 30 s.
   */
  RUN_LEASE_S: positive.default(20),
  /** A run whose process died this many times is given up as an error instead of being taken over again. */
  RUN_MAX_ATTEMPTS: int(1, 100).default(3),
  /**
   * Legs of runs one process executes at once; more wait for a place, in order, and their streams say so
   * (`server_queue`). A bound on the process's memory and CPU, never a reason for a run to fail.
   */
  RUN_MAX_ACTIVE: int(1).default(1000),
  /**
   * How long the work of a run in progress (its events, node rows, checkpoints, queue tickets) waits for the database
   * when it goes away (a restart, a network cut): counted from the first failed write, since waiting for a busy
   * database is not a failure. Past it the leg ends and the run is taken over from its last
   * checkpoint once the database is back. Requests do not wait: they answer 503.
   */
  DATABASE_WAIT_S: positive.default(15),
  /**
   * Connections this process keeps to PostgreSQL for its work (one more listens for notifications). Each process of
   * a cluster has its own: keep processes × (this + 1) under the server's max_connections (docs/configuration.md).
   */
  DATABASE_POOL_MAX: int(2, 1000).default(20),
  /** Days the stored events of a finished run are kept for re-attaching; its run and node rows stay. 0: forever. */
  RUN_EVENTS_RETENTION_DAYS: int(0).default(30),
  /**
   * How often each process offers to run the retention janitor (docs/retention.md); one pass runs per interval across
   * the cluster, whichever process claims it.
   */
  RETENTION_INTERVAL_S: int(1).default(3600),
  /**
   * Hours a finished thread rests before its checkpoints are pruned (in projects that prune): the history of a run
   * just ended stays whole for a while, to fork from.
   */
  RETENTION_PRUNE_AFTER_HOURS: int(0).default(24),
  /** The folders under which a run's local project path may lie, for every caller; see docs/security.md. */
  PROJECT_ROOTS: list.default([]),
  /** Git hosts a run may clone from although they resolve to loopback, link-local or private addresses. */
  GIT_ALLOWED_HOSTS: list.default([]),
  /** The clone cache (DATA_DIR/repositories) as a whole; beyond it the least recently used clones are evicted. */
  GIT_CACHE_MAX_MB: int(1).default(1024),
  /** A cached clone older than this many seconds is fetched again when a run asks for its URL; 0: at every run. */
  GIT_REFRESH_S: int(0).default(60),
  // Tools (docs/tools.md): a call's time limit, how long an MCP server nobody uses stays up, and the hosts on the
  // server's own network an asset's MCP URL may name.
  TOOL_CALL_TIMEOUT_S: int(1).default(60),
  MCP_IDLE_S: int(1).default(300),
  MCP_ELICITATION_TIMEOUT_S: int(1).default(600),
  /** How long a question a tool's MCP server asks mid-call waits for a person (docs/approvals.md). */
  TOOL_QUESTION_EXPIRY_S: int(1).default(3600),
  MCP_ALLOWED_HOSTS: list.default([]),
  /**
   * Whether webhooks may be sent to the server's own network: loopback, link-local (cloud metadata services
   * included) and private addresses are refused, at registration and at every delivery, unless this is true.
   */
  WEBHOOK_ALLOW_PRIVATE_URLS: boolean.default(false),
  /**
   * Prompts and answers in the model calls' spans (`gen_ai.input.messages`, `gen_ai.output.messages`), under the
   * name OpenTelemetry's GenAI instrumentations read; off, spans carry figures only (docs/observability.md#traces).
   */
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: boolean.default(false),
  /**
   * The service's public address (`https://agents.example.com`), for the links in Slack messages and mail, the
   * request URL Slack is given, and with OIDC the issuer and resource MCP clients sign in for (docs/mcp.md). Never
   * taken from a request's Host header, which a caller chooses.
   */
  PUBLIC_URL: url.optional(),
  /** Slack's Web API (a stand-in's address in tests). */
  SLACK_API_URL: url.default('https://slack.com/api'),
  /**
   * The key that seals the secrets the service keeps (Slack's tokens, the mail server's password;
   * docs/configuration.md#secrets-the-service-keeps): 32 bytes, base64 or hex. Unset: a key made in
   * DATA_DIR/secrets.key when the first secret is kept. Never derived from SESSION_SECRET.
   */
  SECRETS_KEY: z.string().trim().min(1).optional(),
  /** The key before SECRETS_KEY, during a rotation: what it sealed is read and sealed again with the new key. */
  SECRETS_KEY_PREVIOUS: z.string().trim().min(1).optional(),
  /** The time limit of one delivery attempt, connection and answer included. */
  WEBHOOK_TIMEOUT_S: positive.default(10),
  /** Attempts of one delivery (the first included) before it is given up as failed. */
  WEBHOOK_MAX_ATTEMPTS: int(1, 50).default(8),
  /** The wait before the first retry; each later one waits twice the one before (at most a day). */
  WEBHOOK_RETRY_BASE_S: positive.default(10),
  /** Days a delivered or failed delivery is kept with its attempts; 0: forever. */
  WEBHOOK_RETENTION_DAYS: int(0).default(30),
  /** Webhooks one project, or one organisation, may have of its own; one more is refused with 409. */
  WEBHOOK_MAX_PER_SCOPE: int(1).default(20),
  /**
   * Delivery attempts one organisation may have in flight at once across the cluster. Below the 8 a process sends
   * at once, so that an organisation whose receivers hang always leaves the others room.
   */
  WEBHOOK_ORG_CONCURRENCY: int(1, 7).default(4),
  /**
   * The same for one project (an organisation's own webhooks count as one more project); below the organisation's,
   * one project leaves its organisation's other projects room.
   */
  WEBHOOK_PROJECT_CONCURRENCY: int(1, 7).default(2),
  /**
   * A sixth cron field of seconds in front, for tests that cannot wait minutes (docs/schedules.md). Off, one minute is
   * the finest grain a schedule has.
   */
  SCHEDULES_ALLOW_SECONDS: boolean.default(false),
  /**
   * How often each process looks for due schedules. An occurrence first seen more than three of these (at least 10 s)
   * after its time counts as missed while no server ran, and goes by its schedule's catch-up policy.
   */
  SCHEDULES_POLL_S: z.coerce.number().min(0.1).max(60).default(5),
  /** Schedules one person may have (made or last changed by her), across every project; one more is refused (409). */
  SCHEDULES_MAX_PER_USER: int(1).default(50),
  /** Schedules one project may have, whoever made them; one more is refused (409). */
  SCHEDULES_MAX_PER_PROJECT: int(1).default(200),
  /**
   * The closest two fires of a schedule may be when a member of its project makes or changes it (400 otherwise), so
   * that nobody fills the scheduler with every-minute runs by herself.
   */
  SCHEDULES_MEMBER_MIN_INTERVAL_S: int(1, 86_400).default(300),
  /** The same for the project's owners and admins, and instance administrators. */
  SCHEDULES_OWNER_MIN_INTERVAL_S: int(1, 86_400).default(60),
  BODY_LIMIT: z
    .string()
    .trim()
    .regex(/^\d+(b|kb|mb)$/i, 'expected a size such as 1mb')
    .default('1mb'),
  /** The largest document POST /projects/{id}/threads/import reads (an export holds a thread's whole history). */
  THREAD_IMPORT_LIMIT: z
    .string()
    .trim()
    .regex(/^\d+(b|kb|mb)$/i, 'expected a size such as 50mb')
    .default('50mb'),
  LOG_LEVEL: z
    .string()
    .trim()
    .toUpperCase()
    .transform((v) => (v === 'WARN' ? 'WARNING' : v))
    .pipe(z.enum(['DEBUG', 'INFO', 'WARNING', 'ERROR']))
    .default('INFO'),
});

export type Config = Readonly<z.infer<typeof schema>>;

/** Every variable of the configuration, by name. */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(schema.shape);

/**
 * Whether the service reads the variable itself: every variable of its configuration, and OpenTelemetry's (`OTEL_*`,
 * read by its SDK). None is ever handed to a tool's server (docs/tools.md#declaring-tools): many hold secrets or carry
 * them (SESSION_SECRET, DATABASE_URL, a LOCAL_LLM_BASE with a password in it), and a list of the secrets alone would
 * miss the next one.
 */
export function isServiceVariable(name: string): boolean {
  return CONFIG_VARIABLES.includes(name) || name.startsWith('OTEL_');
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * Parses every variable once. Empty values count as unset, so `FOO= npm start` means "default".
 * A wrong value throws a ConfigError naming each offending variable.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const known = Object.keys(schema.shape);
  const input: Record<string, string> = {};
  for (const key of known) {
    const value = env[key];
    if (value !== undefined && value !== '') input[key] = value;
  }
  const parsed = schema.safeParse(input);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  }
  return Object.freeze(parsed.data);
}

function isProxyAddress(value: string): boolean {
  if (['loopback', 'linklocal', 'uniquelocal'].includes(value)) return true;
  const [address = '', bits, ...rest] = value.split('/');
  const family = isIP(address);
  if (!family || rest.length) return false;
  return bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128));
}

/** The base address clients use, e.g. for the OIDC redirect and the studio link. */
export function baseUrl(config: Pick<Config, 'HOST' | 'PORT'>, port = config.PORT): string {
  const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? '127.0.0.1' : config.HOST;
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

const LOOPBACK_V6 = new BlockList();
LOOPBACK_V6.addAddress('::1', 'ipv6');

/**
 * Exactly the loopback names: `localhost`, an IPv4 literal in 127.0.0.0/8, and `::1` (bracketed or not, in any of
 * its spellings). A name that merely starts like one, such as `127.0.0.1.evil.example`, is not loopback.
 */
export function isLoopbackHost(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (bare.toLowerCase() === 'localhost') return true;
  switch (isIP(bare)) {
    case 4:
      return bare.split('.')[0] === '127';
    case 6:
      return LOOPBACK_V6.check(bare, 'ipv6');
    default:
      return false;
  }
}

/**
 * The user's data folder. As root the embedded PostgreSQL runs as the `postgres` system user,
 * which cannot reach into root's private home, so root gets a system data folder instead.
 */
function defaultDataDir(): string {
  const app = 'agent-workflow-service';
  if (process.platform === 'win32') return path.join(process.env.APPDATA ?? os.homedir(), app);
  if (process.platform === 'darwin') return path.join(os.homedir(), 'Library', 'Application Support', app);
  if (process.getuid?.() === 0) return path.join('/var/lib', app);
  return path.join(process.env.XDG_DATA_HOME ?? path.join(os.homedir(), '.local', 'share'), app);
}
