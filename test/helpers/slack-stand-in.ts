import { createHmac, randomBytes, randomInt } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local stand-in for Slack, for integration tests: it speaks Slack's real wire protocols, so the service's production
 * Slack client talks to it unchanged (point the service at it with `SLACK_API_URL=<standIn.apiUrl>`).
 *
 * - The Web API, `POST /api/<method>` (GET with query arguments works too): arguments as
 *   `application/x-www-form-urlencoded` (object-valued ones such as `blocks` and `view` are JSON strings inside the
 *   form, as Slack's SDKs send them), as `application/json`, or in the query string; the token as
 *   `Authorization: Bearer <token>` or a `token` argument. Answers are Slack's: HTTP 200 with `{ ok: true, … }` or
 *   `{ ok: false, error }` (`not_authed`, `invalid_auth`, `channel_not_found`, …). It knows `auth.test`, `bots.info`,
 *   `conversations.info`, `chat.postMessage`, `chat.update`, `chat.postEphemeral`, `users.info`,
 *   `users.lookupByEmail` and `views.open`, and keeps what they were given for the test to read: every call, the
 *   messages (with every version `chat.update` made of them), the ephemeral messages and the opened modals.
 * - Slack's side of interactivity: `interact()` POSTs a payload to the service's Request URL as Slack does
 *   (`payload=<JSON>`, form-encoded) and signs it with Slack's v0 scheme: `X-Slack-Request-Timestamp: <seconds>` and
 *   `X-Slack-Signature: v0=<hex HMAC-SHA256 of "v0:<timestamp>:<raw body>" under the app's signing secret>`.
 *   `blockActionPayload()` and `viewSubmissionPayload()` build the payloads of a button press and a modal's submission
 *   in Slack's shapes, each with a fresh trigger id that `views.open` accepts once, within 3 seconds (Slack's rule).
 * - Trouble on demand: `failNext()` makes a method's next calls answer an HTTP error (429 with `Retry-After: 1`, 503…)
 *   or `{ ok: false, error }`; `down(true)` drops every request's connection without an answer.
 */

export interface SlackStandInOptions {
  teamId?: string;
  teamName?: string;
  appId?: string;
  botUserId?: string;
  botId?: string;
  botToken?: string;
  /** Letters and digits, as Slack's are. */
  signingSecret?: string;
}

/** One Web API call as received: object-valued arguments (blocks, view, attachments) parsed from their JSON. */
export interface SlackCall {
  method: string;
  args: Record<string, unknown>;
  /** The bearer token (or `token` argument); null without one. */
  token: string | null;
  /** When it arrived (ms since the epoch). */
  at: number;
}

export interface SlackMessageVersion {
  text: string;
  blocks: unknown[];
}

export interface SlackMessage {
  /** The channel's id. */
  channel: string;
  ts: string;
  thread_ts?: string;
  text: string;
  blocks: unknown[];
  /** Every version, oldest first: the one posted, then each `chat.update`; the last is the current one. */
  versions: SlackMessageVersion[];
}

export interface SlackEphemeral {
  channel: string;
  user: string;
  text: string;
  blocks?: unknown[];
  message_ts: string;
}

/** A modal as `views.open` was given it, with the id Slack gave it. */
export interface SlackViewBody {
  id: string;
  type?: string;
  callback_id?: string;
  private_metadata?: string;
  blocks?: unknown[];
  title?: unknown;
  submit?: unknown;
  close?: unknown;
  [key: string]: unknown;
}

export interface SlackOpenedView {
  id: string;
  trigger_id: string;
  view: SlackViewBody;
}

export interface SlackUser {
  id: string;
  name: string;
  email?: string;
  /** Default true. */
  emailConfirmed?: boolean;
}

export type SlackFailure = { status: number } | { error: string };

export interface InteractOptions {
  /** The request's timestamp, in seconds; default now. */
  timestamp?: number;
  /** Default the stand-in's. */
  signingSecret?: string;
  /** The `X-Slack-Signature` header as is (`v0=…`), to send a bad one. */
  signature?: string;
  /** The raw body as is, instead of `payload=<JSON>`. */
  body?: string;
}

export interface InteractResult {
  status: number;
  body: string;
  /** The answer's body parsed as JSON, if it is JSON. */
  json: unknown | undefined;
  headers: Headers;
  /** What was sent, to send the exact same bytes again (`replay`). */
  rawBody: string;
  signature: string;
  timestamp: number;
}

export interface PayloadUser {
  id: string;
  name?: string;
}

export interface BlockActionPayloadInput {
  user: PayloadUser;
  /** The channel's id. */
  channel: string;
  messageTs: string;
  actionId: string;
  value: string;
  /** Default: the block of the stored message that holds the action, else 'actions'. */
  blockId?: string;
}

export interface ViewSubmissionPayloadInput {
  user: PayloadUser;
  /** The view as `views()` recorded it (with its id). */
  view: SlackViewBody;
  /** block id → action id → the input's state. */
  values: Record<string, Record<string, { type: 'plain_text_input'; value: string }>>;
}

export interface SlackStandIn {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** `url + '/api'`: the service's SLACK_API_URL. */
  apiUrl: string;
  teamId: string;
  teamName: string;
  appId: string;
  botUserId: string;
  botId: string;
  botToken: string;
  signingSecret: string;
  /** Every Web API call, in order of arrival (also the ones refused or failed on purpose). */
  readonly calls: SlackCall[];
  /** Registers a channel (name without `#`) and gives its id; a known name gives its id again. */
  addChannel(name: string): string;
  /** A registered channel's id (`approvals` is registered from the start); throws for an unknown name. */
  channelId(name: string): string;
  addUser(user: SlackUser): void;
  /** The messages posted, in order; only a channel's, given its id or name. */
  messages(channelIdOrName?: string): SlackMessage[];
  message(channelIdOrName: string, ts: string): SlackMessage | undefined;
  ephemerals(): SlackEphemeral[];
  views(): SlackOpenedView[];
  /** Polls `predicate` every 25 ms until it answers something other than undefined or false. */
  waitFor<T>(predicate: () => T | undefined | false, timeoutMs?: number): Promise<T>;
  /**
   * The next `howMany` calls of `method` answer HTTP `status` (429: `{ ok: false, error: 'ratelimited' }` with
   * `Retry-After: 1`; others: `{ ok: false, error: 'service_unavailable' }`), or HTTP 200 `{ ok: false, error }`.
   */
  failNext(method: string, howMany: number, as: SlackFailure): void;
  /** While down, every request's connection is dropped without an answer. */
  down(isDown: boolean): void;
  /** A new trigger id, which `views.open` accepts once within 3 s. */
  issueTriggerId(): string;
  blockActionPayload(input: BlockActionPayloadInput): Record<string, unknown>;
  viewSubmissionPayload(input: ViewSubmissionPayloadInput): Record<string, unknown>;
  /** POSTs `payload` to `requestUrl` as Slack does: form-encoded, signed. */
  interact(requestUrl: string, payload: object, options?: InteractOptions): Promise<InteractResult>;
  /** Sends the exact same bytes and headers as an earlier `interact()`. */
  replay(
    previous: Pick<InteractResult, 'rawBody' | 'signature' | 'timestamp'>,
    requestUrl: string,
  ): Promise<InteractResult>;
  /** Forgets calls, messages, ephemerals, views, trigger ids, pending failures and `down`; keeps channels and users. */
  reset(): void;
  close(): Promise<void>;
}

const DEFAULTS = {
  teamId: 'T0TEAM0001',
  teamName: 'Acme',
  appId: 'A0APP00001',
  botUserId: 'U0BOT00001',
  botId: 'B0BOT00001',
  botToken: 'xoxb-1111-2222-standinbottoken',
  signingSecret: '8f742231b10e8888abcd99yyyzzz85a5',
} satisfies Required<SlackStandInOptions>;

const BOT_NAME = 'approvals-bot';
const TRIGGER_LIFETIME_MS = 3_000;
/** Arguments whose form value is JSON (Slack's SDKs stringify object-valued arguments into the form). */
const JSON_ARGS = new Set(['blocks', 'view', 'attachments', 'metadata']);
const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

type SlackAnswer = Record<string, unknown> & { ok: boolean };

class SlackError extends Error {
  constructor(readonly code: string) {
    super(code);
  }
}

const randomId = (prefix: string, length: number) =>
  prefix + Array.from({ length }, () => ALPHANUMERIC[randomInt(ALPHANUMERIC.length)]).join('');

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A string argument (numbers and booleans as their text, as a form would carry them); undefined when absent. */
function stringArg(args: Record<string, unknown>, key: string): string | undefined {
  const v = args[key];
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return undefined;
}

function requiredArg(args: Record<string, unknown>, key: string): string {
  const v = stringArg(args, key);
  if (v === undefined || v === '')
    throw new SlackError(key === 'trigger_id' ? 'invalid_trigger_id' : 'invalid_arguments');
  return v;
}

function blocksArg(args: Record<string, unknown>): unknown[] | undefined {
  const v = args.blocks;
  if (v === undefined || v === '') return undefined;
  if (!Array.isArray(v)) throw new SlackError('invalid_blocks');
  return v;
}

export function signSlackRequest(signingSecret: string, timestamp: number, rawBody: string): string {
  return 'v0=' + createHmac('sha256', signingSecret).update(`v0:${timestamp}:${rawBody}`).digest('hex');
}

export async function startSlackStandIn(options: SlackStandInOptions = {}): Promise<SlackStandIn> {
  const teamId = options.teamId ?? DEFAULTS.teamId;
  const teamName = options.teamName ?? DEFAULTS.teamName;
  const appId = options.appId ?? DEFAULTS.appId;
  const botUserId = options.botUserId ?? DEFAULTS.botUserId;
  const botId = options.botId ?? DEFAULTS.botId;
  const botToken = options.botToken ?? DEFAULTS.botToken;
  const signingSecret = options.signingSecret ?? DEFAULTS.signingSecret;

  const calls: SlackCall[] = [];
  const channels = new Map<string, string>(); // id → name
  const users = new Map<string, SlackUser>();
  let stored: SlackMessage[] = [];
  let ephemeralList: SlackEphemeral[] = [];
  let viewList: SlackOpenedView[] = [];
  const triggers = new Map<string, { issuedAt: number; used: boolean }>();
  const failures = new Map<string, { remaining: number; as: SlackFailure }[]>();
  let isDown = false;
  let lastTsMicros = 0;

  /** A message timestamp as Slack writes them (`1700000000.000100`): now, in microseconds, strictly increasing. */
  const nextTs = () => {
    lastTsMicros = Math.max(Date.now() * 1000, lastTsMicros + 1);
    return `${Math.floor(lastTsMicros / 1e6)}.${String(lastTsMicros % 1e6).padStart(6, '0')}`;
  };

  const addChannel = (name: string) => {
    const bare = name.replace(/^#/, '');
    for (const [id, n] of channels) if (n === bare) return id;
    let id = randomId('C', 8);
    while (channels.has(id)) id = randomId('C', 8);
    channels.set(id, bare);
    return id;
  };
  addChannel('approvals');

  /** A channel's id from its id or its name (with or without `#`); undefined when it is not known. */
  const resolveChannel = (idOrName: string): string | undefined => {
    if (channels.has(idOrName)) return idOrName;
    const bare = idOrName.replace(/^#/, '');
    for (const [id, n] of channels) if (n === bare) return id;
    return undefined;
  };

  const copyMessage = (m: SlackMessage): SlackMessage => ({ ...m, versions: m.versions.map((v) => ({ ...v })) });

  const userShape = (u: SlackUser) => ({
    id: u.id,
    team_id: teamId,
    name: u.name,
    real_name: u.name,
    deleted: false,
    is_bot: false,
    is_app_user: false,
    profile: {
      ...(u.email !== undefined ? { email: u.email } : {}),
      real_name: u.name,
      display_name: u.name,
      team: teamId,
    },
    is_email_confirmed: u.emailConfirmed ?? true,
  });

  const methods: Record<string, (args: Record<string, unknown>) => SlackAnswer> = {
    'auth.test': () => ({
      ok: true,
      url: 'https://acme.slack.com/',
      team: teamName,
      user: BOT_NAME,
      team_id: teamId,
      user_id: botUserId,
      bot_id: botId,
      is_enterprise_install: false,
    }),

    'bots.info': (args) => {
      const bot = stringArg(args, 'bot');
      if (bot !== undefined && bot !== botId) throw new SlackError('bot_not_found');
      return { ok: true, bot: { id: botId, app_id: appId, user_id: botUserId, name: BOT_NAME, deleted: false } };
    },

    'conversations.info': (args) => {
      const id = requiredArg(args, 'channel');
      const name = channels.get(id);
      if (name === undefined) throw new SlackError('channel_not_found');
      return {
        ok: true,
        channel: { id, name, is_channel: true, is_private: false, is_archived: false, is_member: true },
      };
    },

    'chat.postMessage': (args) => {
      const channel = resolveChannel(requiredArg(args, 'channel'));
      if (channel === undefined) throw new SlackError('channel_not_found');
      const text = stringArg(args, 'text') ?? '';
      const blocks = blocksArg(args) ?? [];
      if (text === '' && blocks.length === 0) throw new SlackError('no_text');
      const threadTs = stringArg(args, 'thread_ts');
      const ts = nextTs();
      stored.push({
        channel,
        ts,
        ...(threadTs ? { thread_ts: threadTs } : {}),
        text,
        blocks,
        versions: [{ text, blocks }],
      });
      return {
        ok: true,
        channel,
        ts,
        message: {
          type: 'message',
          user: botUserId,
          bot_id: botId,
          app_id: appId,
          team: teamId,
          text,
          blocks,
          ts,
          ...(threadTs ? { thread_ts: threadTs } : {}),
        },
      };
    },

    'chat.update': (args) => {
      const channel = requiredArg(args, 'channel');
      const ts = requiredArg(args, 'ts');
      if (!channels.has(channel)) throw new SlackError('channel_not_found');
      const found = stored.find((m) => m.channel === channel && m.ts === ts);
      if (!found) throw new SlackError('message_not_found');
      const text = stringArg(args, 'text') ?? found.text;
      const blocks = blocksArg(args) ?? found.blocks;
      found.text = text;
      found.blocks = blocks;
      found.versions.push({ text, blocks });
      return {
        ok: true,
        channel,
        ts,
        text,
        message: { type: 'message', user: botUserId, bot_id: botId, app_id: appId, text, blocks },
      };
    },

    'chat.postEphemeral': (args) => {
      const channel = resolveChannel(requiredArg(args, 'channel'));
      if (channel === undefined) throw new SlackError('channel_not_found');
      const user = requiredArg(args, 'user');
      const text = stringArg(args, 'text') ?? '';
      const blocks = blocksArg(args);
      if (text === '' && !blocks?.length) throw new SlackError('no_text');
      const messageTs = nextTs();
      ephemeralList.push({ channel, user, text, ...(blocks ? { blocks } : {}), message_ts: messageTs });
      return { ok: true, message_ts: messageTs };
    },

    'users.info': (args) => {
      const user = users.get(requiredArg(args, 'user'));
      if (!user) throw new SlackError('user_not_found');
      return { ok: true, user: userShape(user) };
    },

    'users.lookupByEmail': (args) => {
      const email = requiredArg(args, 'email').toLowerCase();
      const user = [...users.values()].find((u) => u.email?.toLowerCase() === email);
      if (!user) throw new SlackError('users_not_found');
      return { ok: true, user: userShape(user) };
    },

    'views.open': (args) => {
      const triggerId = requiredArg(args, 'trigger_id');
      const trigger = triggers.get(triggerId);
      if (!trigger || trigger.used || Date.now() - trigger.issuedAt > TRIGGER_LIFETIME_MS) {
        throw new SlackError('invalid_trigger_id');
      }
      const view = args.view;
      if (!isRecord(view)) throw new SlackError('invalid_arguments');
      trigger.used = true;
      const id = randomId('V', 10);
      const recorded: SlackViewBody = { ...view, id };
      viewList.push({ id, trigger_id: triggerId, view: recorded });
      return {
        ok: true,
        view: {
          team_id: teamId,
          app_id: appId,
          bot_id: botId,
          state: { values: {} },
          hash: 'h',
          root_view_id: id,
          previous_view_id: null,
          ...view,
          id,
        },
      };
    },
  };

  /** The arguments of a call: the query string's, then the body's (form or JSON). */
  const parseArgs = (query: URLSearchParams, contentType: string, raw: string): Record<string, unknown> => {
    const args: Record<string, unknown> = Object.fromEntries(query);
    const mediaType = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
    if (mediaType === 'application/json') {
      if (raw.trim() !== '') {
        let parsed: unknown;
        try {
          parsed = JSON.parse(raw);
        } catch {
          throw new SlackError('invalid_json');
        }
        if (!isRecord(parsed)) throw new SlackError('invalid_json');
        Object.assign(args, parsed);
      }
    } else if (raw !== '') {
      Object.assign(args, Object.fromEntries(new URLSearchParams(raw)));
    }
    for (const key of JSON_ARGS) {
      const v = args[key];
      if (typeof v === 'string' && /^\s*[[{]/.test(v)) {
        try {
          args[key] = JSON.parse(v) as unknown;
        } catch {
          throw new SlackError(key === 'blocks' ? 'invalid_blocks_format' : 'invalid_arguments');
        }
      }
    }
    return args;
  };

  const send = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers }).end(JSON.stringify(body));
  };

  const handle = (req: http.IncomingMessage, res: http.ServerResponse, raw: string) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const match = /^\/api\/([A-Za-z0-9._-]+)$/.exec(url.pathname);
    if (!match?.[1] || (req.method !== 'POST' && req.method !== 'GET')) {
      send(res, 404, { ok: false, error: 'not_found' });
      return;
    }
    const method = match[1];
    const authorization = req.headers.authorization;
    const bearer = authorization?.match(/^Bearer\s+(\S+)\s*$/i)?.[1];

    let args: Record<string, unknown>;
    let parseError: string | undefined;
    try {
      args = parseArgs(url.searchParams, req.headers['content-type'] ?? '', raw);
    } catch (error) {
      args = {};
      parseError = error instanceof SlackError ? error.code : 'invalid_form_data';
    }
    const { token: tokenArg, ...rest } = args;
    const token = bearer ?? (typeof tokenArg === 'string' && tokenArg !== '' ? tokenArg : null);
    calls.push({ method, args: rest, token, at: Date.now() });

    const queue = failures.get(method);
    const failure = queue?.[0];
    if (queue && failure) {
      failure.remaining -= 1;
      if (failure.remaining <= 0) queue.shift();
      if ('status' in failure.as) {
        const status = failure.as.status;
        if (status === 429) send(res, 429, { ok: false, error: 'ratelimited' }, { 'retry-after': '1' });
        else send(res, status, { ok: false, error: 'service_unavailable' });
      } else {
        send(res, 200, { ok: false, error: failure.as.error });
      }
      return;
    }

    if (token === null) return send(res, 200, { ok: false, error: 'not_authed' });
    if (token !== botToken) return send(res, 200, { ok: false, error: 'invalid_auth' });
    if (parseError) return send(res, 200, { ok: false, error: parseError });
    const implementation = Object.hasOwn(methods, method) ? methods[method] : undefined;
    if (!implementation) return send(res, 200, { ok: false, error: 'unknown_method' });
    try {
      send(res, 200, implementation(rest));
    } catch (error) {
      if (error instanceof SlackError) send(res, 200, { ok: false, error: error.code });
      else send(res, 500, { ok: false, error: 'internal_error' });
    }
  };

  const server = http.createServer((req, res) => {
    if (isDown) {
      req.socket.destroy();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (isDown) {
        req.socket.destroy();
        return;
      }
      handle(req, res, Buffer.concat(chunks).toString('utf8'));
    });
    req.on('error', () => undefined);
  });
  server.on('clientError', (_error, socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;

  const issueTriggerId = () => {
    const id = `${randomInt(10_000, 99_999_999_999)}.${randomInt(10_000, 999_999_999)}.${randomBytes(16).toString('hex')}`;
    triggers.set(id, { issuedAt: Date.now(), used: false });
    return id;
  };

  const payloadUser = (u: PayloadUser) => {
    const name = u.name ?? users.get(u.id)?.name ?? u.id;
    return { id: u.id, username: name, name, team_id: teamId };
  };

  /** The block of `blocks` that holds the element `actionId`, if any. */
  const blockIdOf = (blocks: unknown[], actionId: string): string | undefined => {
    for (const block of blocks) {
      if (!isRecord(block) || typeof block.block_id !== 'string') continue;
      const elements = [
        ...(Array.isArray(block.elements) ? block.elements : []),
        ...(block.accessory !== undefined ? [block.accessory] : []),
      ];
      if (elements.some((e) => isRecord(e) && e.action_id === actionId)) return block.block_id;
    }
    return undefined;
  };

  const post = async (
    requestUrl: string,
    rawBody: string,
    signature: string,
    timestamp: number,
  ): Promise<InteractResult> => {
    const response = await fetch(requestUrl, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'user-agent': 'Slackbot 1.0 (+https://api.slack.com/robots)',
        'x-slack-request-timestamp': String(timestamp),
        'x-slack-signature': signature,
      },
      body: rawBody,
    });
    const body = await response.text();
    let json: unknown;
    try {
      json = body === '' ? undefined : (JSON.parse(body) as unknown);
    } catch {
      json = undefined;
    }
    return { status: response.status, body, json, headers: response.headers, rawBody, signature, timestamp };
  };

  return {
    url,
    apiUrl: `${url}/api`,
    teamId,
    teamName,
    appId,
    botUserId,
    botId,
    botToken,
    signingSecret,
    calls,

    addChannel,
    channelId: (name) => {
      const id = resolveChannel(name);
      if (id === undefined) throw new Error(`slack stand-in: no channel ${name}`);
      return id;
    },
    addUser: (user) => {
      users.set(user.id, { ...user });
    },

    messages: (channelIdOrName) => {
      if (channelIdOrName === undefined) return stored.map(copyMessage);
      const id = resolveChannel(channelIdOrName) ?? channelIdOrName;
      return stored.filter((m) => m.channel === id).map(copyMessage);
    },
    message: (channelIdOrName, ts) => {
      const id = resolveChannel(channelIdOrName) ?? channelIdOrName;
      const found = stored.find((m) => m.channel === id && m.ts === ts);
      return found && copyMessage(found);
    },
    ephemerals: () => ephemeralList.map((e) => ({ ...e })),
    views: () => viewList.map((v) => ({ ...v })),

    waitFor: async <T>(predicate: () => T | undefined | false, timeoutMs = 15_000): Promise<T> => {
      const deadline = Date.now() + timeoutMs;
      let lastError: unknown;
      for (;;) {
        try {
          const value = predicate();
          if (value !== undefined && value !== false) return value;
        } catch (error) {
          lastError = error;
        }
        if (Date.now() >= deadline) {
          const why = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
          const calledMethods = calls.map((c) => c.method).join(', ') || 'none';
          throw new Error(
            `slack stand-in: waited ${timeoutMs} ms and the condition did not hold${why}. ` +
              `${calls.length} Web API calls so far: ${calledMethods}; ${stored.length} messages posted.`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },

    failNext: (method, howMany, as) => {
      if (howMany <= 0) return;
      const queue = failures.get(method) ?? [];
      queue.push({ remaining: howMany, as });
      failures.set(method, queue);
    },
    down: (value) => {
      isDown = value;
    },

    issueTriggerId,

    blockActionPayload: ({ user, channel, messageTs, actionId, value, blockId }) => {
      const found = stored.find((m) => m.channel === channel && m.ts === messageTs);
      const blocks = found?.blocks ?? [];
      return {
        type: 'block_actions',
        team: { id: teamId, domain: 'acme' },
        user: payloadUser(user),
        api_app_id: appId,
        token: 'legacy-verification-token',
        container: { type: 'message', message_ts: messageTs, channel_id: channel, is_ephemeral: false },
        trigger_id: issueTriggerId(),
        channel: { id: channel, name: channels.get(channel) ?? channel },
        message: {
          type: 'message',
          user: botUserId,
          bot_id: botId,
          app_id: appId,
          team: teamId,
          ts: messageTs,
          text: found?.text ?? '',
          blocks,
        },
        state: { values: {} },
        response_url: `https://hooks.slack.com/actions/${teamId}/123/abc`,
        actions: [
          {
            action_id: actionId,
            block_id: blockId ?? blockIdOf(blocks, actionId) ?? 'actions',
            value,
            type: 'button',
            action_ts: nextTs(),
          },
        ],
        is_enterprise_install: false,
        enterprise: null,
      };
    },

    viewSubmissionPayload: ({ user, view, values }) => ({
      type: 'view_submission',
      team: { id: teamId, domain: 'acme' },
      user: payloadUser(user),
      api_app_id: appId,
      token: 'legacy-verification-token',
      trigger_id: issueTriggerId(),
      view: {
        id: view.id,
        team_id: teamId,
        type: 'modal',
        callback_id: view.callback_id ?? '',
        private_metadata: view.private_metadata ?? '',
        ...(view.title !== undefined ? { title: view.title } : {}),
        ...(view.submit !== undefined ? { submit: view.submit } : {}),
        ...(view.close !== undefined ? { close: view.close } : {}),
        blocks: view.blocks ?? [],
        state: { values },
        hash: 'h',
        root_view_id: view.id,
        previous_view_id: null,
        app_id: appId,
        bot_id: botId,
      },
      response_urls: [],
      is_enterprise_install: false,
      enterprise: null,
    }),

    interact: (requestUrl, payload, interactOptions = {}) => {
      const timestamp = interactOptions.timestamp ?? Math.floor(Date.now() / 1000);
      const rawBody = interactOptions.body ?? new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
      const signature =
        interactOptions.signature ??
        signSlackRequest(interactOptions.signingSecret ?? signingSecret, timestamp, rawBody);
      return post(requestUrl, rawBody, signature, timestamp);
    },
    replay: (previous, requestUrl) => post(requestUrl, previous.rawBody, previous.signature, previous.timestamp),

    reset: () => {
      calls.length = 0;
      stored = [];
      ephemeralList = [];
      viewList = [];
      triggers.clear();
      failures.clear();
      isDown = false;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
