import { errorMessage } from '../contracts/errors';

/** Slack answered, and said no (`ok: false`): a token, a channel or an argument it does not take. */
export class SlackRefusedError extends Error {
  override name = 'SlackRefusedError';
  constructor(
    readonly method: string,
    readonly code: string,
  ) {
    super(`Slack refused ${method}: ${code}`);
  }
}

/** Slack could not be reached, or answered with a failure of its own (5xx, 429): worth trying again later. */
export class SlackUnavailableError extends Error {
  override name = 'SlackUnavailableError';
}

const TIMEOUT_MS = 10_000;

/**
 * Slack's Web API (https://api.slack.com/web), the few methods the service calls: POSTs of form-encoded arguments
 * (objects such as `blocks` and `view` as JSON inside the form, as Slack takes them for every method) with the bot
 * token as a bearer token. `baseUrl` is SLACK_API_URL: Slack's own address, or a stand-in's in tests.
 */
export function slackWebApi(baseUrl: string) {
  const base = baseUrl.replace(/\/+$/, '');
  return {
    async call<T extends object = Record<string, unknown>>(
      token: string,
      method: string,
      args: Record<string, unknown> = {},
    ): Promise<T & { ok: true }> {
      const form = new URLSearchParams();
      for (const [name, value] of Object.entries(args)) {
        if (value === undefined || value === null) continue;
        form.set(name, typeof value === 'object' ? JSON.stringify(value) : String(value));
      }
      let response: Response;
      try {
        response = await fetch(`${base}/${method}`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/x-www-form-urlencoded; charset=utf-8',
          },
          body: form,
          redirect: 'error',
          signal: AbortSignal.timeout(TIMEOUT_MS),
        });
      } catch (error) {
        throw new SlackUnavailableError(`Slack could not be reached (${method}): ${errorMessage(error)}`);
      }
      if (response.status === 429 || response.status >= 500) {
        await response.body?.cancel();
        throw new SlackUnavailableError(`Slack answered ${method} with HTTP ${response.status}`);
      }
      const body = (await response.json().catch(() => null)) as { ok?: boolean; error?: string } | null;
      if (!body || typeof body !== 'object') {
        throw new SlackUnavailableError(`Slack answered ${method} with HTTP ${response.status} and no JSON`);
      }
      if (body.ok !== true) throw new SlackRefusedError(method, String(body.error ?? `HTTP ${response.status}`));
      return body as T & { ok: true };
    },
  };
}

export type SlackWebApi = ReturnType<typeof slackWebApi>;
