import { createHash } from 'node:crypto';
import type { lookup } from 'node:dns';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { ElicitRequest, ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import canonicalize from 'canonicalize';
import { isServiceVariable } from '../config';
import { errorMessage } from '../contracts/errors';
import { TOOL_NAME_PATTERN, type McpServer, type ToolDefinition, type ToolResult } from '../contracts/tools';
import { getLogger, registerSecret } from '../log';
import { pinnedFetch, type PinnedFetch } from '../net/pinned-fetch';
import { abortable } from './abortable';
import { loadMcpSdk, mcpErrorCode, mcpErrorCodes, type McpSdk } from './mcp-sdk';
import { McpServerError } from './mcp-server-error';
import { checkMcpServerUrl, mcpUrlOrigin } from './mcp-server-url';
import { stdioLaunch } from './mcp-stdio-launch';
import type { StdioServers } from './mcp-stdio-sandbox';
import { toolDefinition, toolResult } from './mcp-tool-mapping';
import { PausableTimer } from './pausable-timer';
import type { QuestionAsker } from '../contracts/tool-questions';
import { capToolText } from './tool-result';
import { traceHeaders } from '../tracing/trace-context';

export { McpServerError } from './mcp-server-error';

const log = getLogger('svc.mcp');

/** How long close() waits for a stdio server's process; the SDK kills it with SIGKILL well before. */
const STOP_WAIT_MS = 10_000;

/** A line a stdio server writes on stderr is logged up to this length: a server cannot flood the log. */
const MAX_STDERR_LINE = 2000;

export interface McpServersOptions {
  /** The service's environment (process.env): a stdio server gets its PATH, HOME and LANG. */
  env: Readonly<Record<string, string | undefined>>;
  /**
   * The values of the variables a server's declaration names (a stdio server's `env`, an http server's `headers`), for
   * a run of the project: its secret, else its organisation's, else the service's environment (secrets.service.ts); a
   * name nothing sets is undefined. Asked at every use, so that a changed secret applies from the next call.
   */
  variables(projectId: string, names: readonly string[]): Promise<Record<string, string | undefined>>;
  /** Close a server nobody used for this long (ms). */
  idleMs: number;
  /** Time limit of one tool call, and of a server's start (connect and initialisation) and of a listing (ms). */
  callTimeoutMs: number;
  /** Hosts on the server's own network (loopback, private) an http MCP URL may name, as GIT_ALLOWED_HOSTS for git. */
  allowedPrivateHosts: readonly string[];
  /**
   * Folders searched first for a stdio command given as a bare name: the service's own node_modules/.bin, so that a
   * shipped asset can name `mcp-server-filesystem`.
   */
  binDirs: readonly string[];
  /** How stdio servers run on this machine (mcp-stdio-sandbox.ts): confined, unconfined, or refused. */
  stdio: StdioServers;
  /** The resolver of http servers' hosts: the system's (dns.lookup) unless a test gives one whose answers change. */
  resolve?: typeof lookup;
}

/** The value of each variable a server's declaration names; undefined: nothing sets it. */
type Variables = Record<string, string | undefined>;

/** One server's connection, shared by the calls of one scope with one declaration and the same variables' values. */
interface Connection {
  key: string;
  name: string;
  /** Settles when the server has started and answered MCP's initialisation. */
  ready: Promise<Client>;
  /** Settles when the connection has closed: a stdio server's process has exited. */
  closed: Promise<void>;
  /** Calls and listings under way: the idle timer runs only when there are none. */
  users: number;
  idle: NodeJS.Timeout | undefined;
  /** Set once the connection is out of the map and closing: a dead or idle one is never reused. */
  closing: Promise<void> | undefined;
  /** The tool calls under way on it: a question the server asks mid-call is for the one call in flight. */
  calls: Set<CallInFlight>;
}

/** A tool call under way: who to ask when its server asks a question, and its time limit, paused meanwhile. */
interface CallInFlight {
  ask: QuestionAsker | undefined;
  timer: PausableTimer;
}

/** The SDK's own limit on a request, set past any call's: a call's limit is ours, paused while a person answers. */
const NO_SDK_TIMEOUT_MS = 2 ** 31 - 1;

type ElicitContent = Extract<ElicitResult, { content?: unknown }>['content'];

/**
 * The MCP servers an asset declares, as the service's MCP client (the official SDK's Client): each started on its first
 * use and shared only by the calls of one scope (the run's project) with the same declaration, project folder and
 * values of its variables (project or organisation secrets, or the service's environment), closed when unused for
 * `idleMs` (a stdio server's process exits), and started again at the next use when it died.
 */
export class McpServers {
  private readonly connections = new Map<string, Connection>();
  /** Clients being closed: a stdio server may take a few seconds to exit, and close() waits for every one. */
  private readonly stopping = new Set<Promise<void>>();
  private shutDown = false;

  constructor(private readonly options: McpServersOptions) {}

  /**
   * The server's tools as the model sees them (`<server>.<tool>`). Throws McpServerError when the server cannot be
   * started, reached or listed, and the signal's reason when it aborts.
   */
  async tools(
    scope: string,
    server: McpServer,
    projectPath: string | null,
    signal: AbortSignal,
  ): Promise<ToolDefinition[]> {
    try {
      return await this.use(scope, server, projectPath, signal, async (client, requestSignal) => {
        const tools: ToolDefinition[] = [];
        let cursor: string | undefined;
        do {
          const page = await client.listTools(cursor === undefined ? undefined : { cursor }, {
            timeout: this.options.callTimeoutMs,
            signal: requestSignal,
          });
          for (const tool of page.tools) {
            if (TOOL_NAME_PATTERN.test(tool.name)) tools.push(toolDefinition(server.name, tool));
            else
              log.warn(`${server.name}: tool ${JSON.stringify(tool.name)} left out: not a name ${TOOL_NAME_PATTERN}`);
          }
          cursor = page.nextCursor;
        } while (cursor !== undefined);
        return tools;
      });
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      if (error instanceof McpServerError) throw error;
      throw new McpServerError(`${failure(server.name, error, this.options.callTimeoutMs)} (listing its tools)`);
    }
  }

  /**
   * Calls one tool. Whatever goes wrong on the server's side (it could not start, it timed out, it died, it answered
   * with an error) is a result with `is_error`; only the signal aborting throws (its reason). A question the server
   * asks in the middle of the call goes to `ask` (docs/approvals.md#questions-from-tool-servers); the call's time limit
   * stops counting while it waits.
   */
  async call(
    scope: string,
    server: McpServer,
    projectPath: string | null,
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
    ask?: QuestionAsker,
  ): Promise<ToolResult> {
    try {
      return await this.use(scope, server, projectPath, signal, async (client, requestSignal, connection) => {
        const sdk = await loadMcpSdk();
        const deadline = new AbortController();
        const timedOut = new sdk.McpError(sdk.ErrorCode.RequestTimeout, 'Request timed out');
        const call: CallInFlight = {
          ask,
          timer: new PausableTimer(this.options.callTimeoutMs, () => deadline.abort(timedOut)),
        };
        connection.calls.add(call);
        try {
          return toolResult(
            await client.callTool({ name: tool, arguments: args }, undefined, {
              timeout: NO_SDK_TIMEOUT_MS,
              signal: AbortSignal.any([requestSignal, deadline.signal]),
            }),
          );
        } finally {
          call.timer.clear();
          connection.calls.delete(call);
        }
      });
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      const text =
        error instanceof McpServerError ? error.message : failure(server.name, error, this.options.callTimeoutMs);
      return { text: capToolText(`${text} (calling ${tool})`), is_error: true };
    }
  }

  /**
   * A question the server asks mid-call, for the one call in flight on the connection (a server's request names no
   * call: with several under way, nobody can tell whose it is, and the server hears `decline`). URL mode takes only an
   * http(s) page, which the service never opens itself.
   */
  private async elicit(
    name: string,
    connection: Connection,
    params: ElicitRequest['params'],
    withdrawn: AbortSignal,
  ): Promise<ElicitResult> {
    const url = params.mode === 'url' ? params.url : null;
    if (url !== null && !/^https?:$/.test(safeProtocol(url))) {
      const sdk = await loadMcpSdk();
      throw new sdk.McpError(sdk.ErrorCode.InvalidParams, 'a question may send a person only to an http(s) page');
    }
    const calls = [...connection.calls];
    const call = calls.length === 1 ? calls[0] : undefined;
    if (!call?.ask) {
      log.warn(
        `${name}: a question came with ${calls.length} calls under way${calls.length === 1 ? ' that cannot ask' : ''}: declined`,
      );
      return { action: 'decline' };
    }
    const resume = call.timer.pause();
    try {
      const answer = await call.ask(
        {
          mode: url !== null ? 'url' : 'form',
          message: params.message,
          requestedSchema: params.mode === 'url' ? null : (params.requestedSchema as Record<string, unknown>),
          url,
        },
        withdrawn,
      );
      if (answer.action !== 'accept') return { action: answer.action };
      return url !== null ? { action: 'accept' } : { action: 'accept', content: answer.content as ElicitContent };
    } finally {
      resume();
    }
  }

  /** Closes every server (stdio processes exit); a later use is refused. */
  async close(): Promise<void> {
    this.shutDown = true;
    await Promise.all([...this.connections.values()].map((connection) => this.drop(connection)));
    await Promise.all(this.stopping);
  }

  /**
   * Runs `work` on the server's connection, started if there is none. The caller's signal is passed to the SDK through
   * a signal of this request alone: the SDK never removes its listener, and a run's signal serves many calls.
   */
  private async use<T>(
    scope: string,
    server: McpServer,
    projectPath: string | null,
    signal: AbortSignal,
    work: (client: Client, requestSignal: AbortSignal, connection: Connection) => Promise<T>,
  ): Promise<T> {
    signal.throwIfAborted();
    if (this.shutDown) throw new McpServerError(`MCP server "${server.name}": the service is shutting down`);
    const variables = await abortable(this.variablesOf(scope, server), signal);
    if (this.shutDown) throw new McpServerError(`MCP server "${server.name}": the service is shutting down`);
    const key = connectionKey(scope, server, projectPath, variables);
    const connection = this.connections.get(key) ?? this.start(key, server, projectPath, variables);
    connection.users += 1;
    clearTimeout(connection.idle);
    const request = new AbortController();
    const forward = () => request.abort(signal.reason);
    signal.addEventListener('abort', forward, { once: true });
    try {
      return await work(await abortable(connection.ready, signal), request.signal, connection);
    } catch (error) {
      if (!signal.aborted && isConnectionLost(error)) void this.drop(connection);
      throw error;
    } finally {
      signal.removeEventListener('abort', forward);
      connection.users -= 1;
      if (connection.users === 0 && !connection.closing) {
        connection.idle = setTimeout(() => {
          log.info(`${server.name}: closed after ${this.options.idleMs} ms unused`);
          void this.drop(connection);
        }, this.options.idleMs).unref();
      }
    }
  }

  /**
   * The values of the variables the server's declaration names, for the scope (its project): none asked for when it
   * names none. Each is registered with the log, which then never shows it.
   */
  private async variablesOf(scope: string, server: McpServer): Promise<Variables> {
    // A name the service reads itself is never read for a server: transport() refuses the server.
    const declared = server.transport === 'stdio' ? server.env : Object.values(server.headers);
    const names = [...new Set(declared)].filter((name) => !isServiceVariable(name));
    if (names.length === 0) return {};
    let values: Record<string, string | undefined>;
    try {
      values = await this.options.variables(scope, names);
    } catch (error) {
      throw new McpServerError(
        `MCP server "${server.name}" is not started: the values of its variables could not be read ` +
          `(${errorMessage(error)})`,
      );
    }
    const variables: Variables = {};
    for (const name of names) {
      const value = values[name];
      registerSecret(value);
      variables[name] = value;
    }
    return variables;
  }

  private start(key: string, server: McpServer, projectPath: string | null, variables: Variables): Connection {
    const connection: Connection = {
      key,
      name: server.name,
      ready: undefined!,
      closed: undefined!,
      users: 0,
      idle: undefined,
      closing: undefined,
      calls: new Set(),
    };
    connection.ready = this.connect(server, projectPath, variables, connection);
    // A start that failed is not kept: the next use tries again.
    connection.ready.catch(() => void this.drop(connection));
    this.connections.set(key, connection);
    return connection;
  }

  /** Starts or reaches the server and initialises MCP, all within `callTimeoutMs`. */
  private async connect(
    server: McpServer,
    projectPath: string | null,
    variables: Variables,
    connection: Connection,
  ): Promise<Client> {
    const sdk = await loadMcpSdk();
    // Questions (elicitation, both modes) go to a person; nothing else a server may ask is offered (sampling above
    // all: a tool server never reaches the service's models), and what is asked anyway is refused by name.
    const client = new sdk.Client(
      { name: 'agent-workflow-service', version: '1' },
      // applyDefaults: a field a person leaves empty takes the default the server's form gives it (the SDK's doing).
      { capabilities: { elicitation: { form: { applyDefaults: true }, url: {} } } },
    );
    // The request's signal aborts when the server cancels it (notifications/cancelled): the question is withdrawn.
    client.setRequestHandler(sdk.ElicitRequestSchema, (request, extra) =>
      this.elicit(server.name, connection, request.params, extra.signal),
    );
    client.fallbackRequestHandler = (request) =>
      Promise.reject(
        new sdk.McpError(
          sdk.ErrorCode.MethodNotFound,
          request.method === 'sampling/createMessage'
            ? 'sampling is not offered: this client does not let tool servers use its models'
            : `${request.method} is not offered by this client`,
        ),
      );
    let started = false;
    connection.closed = new Promise<void>((resolve) => {
      client.onclose = () => {
        resolve();
        // A start that fails is reported by its error, not as a server that stopped.
        if (!started || connection.closing) return;
        log.warn(`${server.name}: stopped; it is started again at its next use`);
        void this.drop(connection);
      };
    });
    // A timer rather than AbortSignal.timeout(): the SDK keeps its listener on the signal after the start, and a
    // signal that fired later would send the server a cancellation of a request long answered.
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new Error('time-out')), this.options.callTimeoutMs);
    let transport: Transport | undefined;
    try {
      transport = await this.transport(sdk, server, projectPath, variables, deadline.signal);
      await client.connect(transport, { timeout: this.options.callTimeoutMs, signal: deadline.signal });
      started = true;
      log.info(
        `${server.name}: started (${server.transport === 'http' ? mcpUrlOrigin(server.url) : processOf(sdk, transport, this.options.stdio)})`,
      );
      return client;
    } catch (error) {
      // Not waited for: the caller hears of the failure at once, while the process is ended (close() waits).
      if (transport) void this.stop(connection, client);
      if (error instanceof McpServerError) throw error;
      if (deadline.signal.aborted || mcpErrorCode(error) === sdk.ErrorCode.RequestTimeout) {
        throw new McpServerError(`MCP server "${server.name}" did not start within ${this.options.callTimeoutMs} ms`);
      }
      throw new McpServerError(`MCP server "${server.name}" could not be started: ${startFailure(error)}`);
    } finally {
      clearTimeout(timer);
    }
  }

  private async transport(
    sdk: McpSdk,
    server: McpServer,
    projectPath: string | null,
    variables: Variables,
    signal: AbortSignal,
  ): Promise<Transport> {
    // The asset compiler refuses these; an agent stored before it did is refused here.
    const own = (server.transport === 'stdio' ? server.env : Object.values(server.headers)).filter(isServiceVariable);
    if (own.length) {
      throw new McpServerError(
        `MCP server "${server.name}" is not started: it names ${own.join(', ')}, which the service reads itself; a ` +
          "tool's server never gets those",
      );
    }
    if (server.transport === 'stdio') {
      const { stdio } = this.options;
      if (stdio.mode === 'refused') {
        throw new McpServerError(`MCP server "${server.name}" is not started: ${stdio.reason}`);
      }
      const launch = await stdioLaunch(server, projectPath, {
        env: this.options.env,
        variables,
        binDirs: this.options.binDirs,
        inherited: sdk.DEFAULT_INHERITED_ENV_VARS,
        wrapper: stdio.mode === 'confined' ? stdio.wrapper : [],
      });
      const transport = new sdk.StdioClientTransport({ ...launch, stderr: 'pipe' });
      logLines(server.name, transport.stderr as Readable);
      return transport;
    }
    const { url, addresses } = await checkMcpServerUrl(
      server.name,
      server.url,
      this.options.allowedPrivateHosts,
      signal,
      this.options.resolve,
    );
    const headers: Record<string, string> = {};
    for (const [header, variable] of Object.entries(server.headers)) {
      const value = variables[variable];
      if (value === undefined) {
        throw new McpServerError(
          `MCP server "${server.name}" needs the environment variable ${variable} for its header ${header}, which ` +
            "nothing sets: set it as a project or organisation secret, or in the service's environment",
        );
      }
      headers[header] = value;
    }
    // Every request of the connection goes to the addresses checked above, over connections of its own.
    const pinned = pinnedFetch(addresses);
    const transport = new sdk.StreamableHTTPClientTransport(url, {
      requestInit: { headers },
      fetch: traced(pinned.fetch),
    });
    transport.onclose = () => pinned.close();
    return transport;
  }

  /** Takes the connection out of use and closes it (a stdio server's process exits). */
  private drop(connection: Connection): Promise<void> {
    if (connection.closing) return connection.closing;
    clearTimeout(connection.idle);
    if (this.connections.get(connection.key) === connection) this.connections.delete(connection.key);
    connection.closing = connection.ready.then(
      (client) => this.stop(connection, client),
      () => {},
    );
    return connection.closing;
  }

  /**
   * Closes the client and waits until its connection has closed: the SDK ends a stdio server that outlives the end of
   * its input (SIGTERM, then SIGKILL, within seconds), and its `close()` alone does not wait when a failed start has
   * already begun that.
   */
  private stop(connection: Connection, client: Client): Promise<void> {
    const stopped = client
      .close()
      .catch(() => {})
      .then(() => abortable(connection.closed, AbortSignal.timeout(STOP_WAIT_MS)))
      .catch(() => log.warn(`${connection.name}: did not stop within ${STOP_WAIT_MS} ms`));
    this.stopping.add(stopped);
    void stopped.finally(() => this.stopping.delete(stopped));
    return stopped;
  }
}

/**
 * Calls share a connection when they share the scope and the declaration, for a stdio server the project folder (its
 * arguments and working folder), and the values of the declaration's variables: canonical JSON, so that the order of
 * a declaration's keys does not matter. The values go in as their own hash: a changed secret makes another key (the
 * next call starts the server again with it, the old connection left to its idle time), and no value is in a key.
 */
function connectionKey(scope: string, server: McpServer, projectPath: string | null, variables: Variables): string {
  const folder = server.transport === 'stdio' ? projectPath : null;
  const values = createHash('sha256')
    .update(canonicalize(variables) ?? '')
    .digest('hex');
  return createHash('sha256')
    .update(canonicalize({ scope, server, folder, values }) ?? '')
    .digest('hex');
}

/** A failure that leaves the connection unusable: it is dropped, and the next use starts the server again. */
function isConnectionLost(error: unknown): boolean {
  if (error instanceof McpServerError) return true;
  const code = mcpErrorCode(error);
  return code === undefined || code === mcpErrorCodes()?.ConnectionClosed;
}

function failure(name: string, error: unknown, timeoutMs: number): string {
  const code = mcpErrorCode(error);
  if (code === mcpErrorCodes()?.RequestTimeout) return `MCP server "${name}" did not answer within ${timeoutMs} ms`;
  if (code === mcpErrorCodes()?.ConnectionClosed) {
    return `MCP server "${name}" stopped before it answered (its process exited or its connection closed)`;
  }
  if (code !== undefined) return `MCP server "${name}" answered with an error: ${errorMessage(error)}`;
  return `MCP server "${name}" could not be reached: ${errorMessage(error)}`;
}

/** The scheme of a URL, or '' when it is none. */
function safeProtocol(url: string): string {
  try {
    return new URL(url).protocol;
  } catch {
    return '';
  }
}

function startFailure(error: unknown): string {
  if (mcpErrorCode(error) === mcpErrorCodes()?.ConnectionClosed) {
    return 'it stopped before it answered (its error output is in the log)';
  }
  return errorMessage(error);
}

function processOf(sdk: McpSdk, transport: Transport, stdio: StdioServers): string {
  return transport instanceof sdk.StdioClientTransport ? `pid ${transport.pid}, ${stdio.mode}` : 'no process';
}

/** A stdio server's stderr, a log line per line, prefixed with the server's name. */
function logLines(name: string, stream: Readable): void {
  createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
    const shown = line.length > MAX_STDERR_LINE ? `${line.slice(0, MAX_STDERR_LINE)}…` : line;
    log.info(`${name}: ${shown}`);
  });
}

/**
 * Each request to an MCP server over HTTP carries the trace of the tool call that makes it (`traceparent`), so the
 * server's own spans join the run's trace; nothing is added while tracing is off. The connection outlives one call:
 * the header is read from the call under way, at each request.
 */
function traced(fetch: PinnedFetch): PinnedFetch {
  return (input, init) => {
    const trace = traceHeaders();
    if (Object.keys(trace).length === 0) return fetch(input, init);
    const headers = new Headers(init?.headers);
    for (const [name, value] of Object.entries(trace)) headers.set(name, value);
    return fetch(input, { ...init, headers });
  };
}
