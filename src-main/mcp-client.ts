import { CreatedPersonalTokenSchema, PERSONAL_TOKEN_PATTERN } from '../src-server/contracts/auth';
import { UuidSchema } from '../src-server/contracts/common';
import { mcpClientConfig } from '../src-server/contracts/mcp-client-config';
import { MCP_TOKEN_SECRET, type McpClient } from './desktop-api';
import type { Keychain } from './keychain';

/** The name the token goes by in the studio's list of personal access tokens. */
export const MCP_TOKEN_NAME = 'MCP clients (desktop app)';

/** What the keychain keeps: the token, and its id on the server (to revoke it when it is replaced). */
interface StoredMcpToken {
  id: string;
  token: string;
}

/** The stored token; anything else under that name (written by hand, by an older version) counts as none. */
export async function readMcpToken(keychain: Keychain): Promise<StoredMcpToken | null> {
  try {
    const stored = JSON.parse((await keychain.get(MCP_TOKEN_SECRET)) ?? 'null') as Partial<StoredMcpToken> | null;
    const usable =
      UuidSchema.safeParse(stored?.id).success &&
      typeof stored?.token === 'string' &&
      PERSONAL_TOKEN_PATTERN.test(stored.token);
    return usable ? { id: stored!.id!, token: stored!.token! } : null;
  } catch {
    return null;
  }
}

/** What the app shows in Settings → MCP clients: the endpoint of the running server, and the stored token. */
export async function mcpClient(serverUrl: string | null, keychain: Keychain): Promise<McpClient> {
  const token = (await readMcpToken(keychain))?.token ?? null;
  return {
    url: serverUrl ? `${serverUrl}/mcp` : null,
    token,
    config: serverUrl && token ? mcpClientConfig(serverUrl, token) : null,
  };
}

/** The error envelope's message, or the status when the answer is not one. */
async function refusal(res: Response): Promise<string> {
  const body = (await res.json().catch(() => null)) as { error?: { message?: string } } | null;
  return body?.error?.message ?? `${res.status} ${res.statusText}`;
}

/**
 * Makes a new token through the server's API, as the app's local user (the per-launch `apiToken`: the API token's
 * administrator), keeps it, then revokes the one it replaces. In that order: whatever fails, the keychain holds a
 * token that works. Without a keychain nothing is made, since nothing could keep it.
 */
export async function replaceMcpToken(options: {
  serverUrl: string;
  apiToken: string;
  keychain: Keychain;
}): Promise<void> {
  const { serverUrl, apiToken, keychain } = options;
  if (!keychain.available) throw new Error(`no keychain (${keychain.reason}): the app has nowhere to keep a token`);
  const old = await readMcpToken(keychain);
  const authorization = `Bearer ${apiToken}`;
  const res = await fetch(`${serverUrl}/me/tokens`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify({ name: MCP_TOKEN_NAME }),
  });
  if (!res.ok) throw new Error(`the server did not make a token: ${await refusal(res)}`);
  const made = CreatedPersonalTokenSchema.parse(await res.json());
  await keychain.set(MCP_TOKEN_SECRET, JSON.stringify({ id: made.id, token: made.token } satisfies StoredMcpToken));
  if (!old) return;
  const revoked = await fetch(`${serverUrl}/me/tokens/${old.id}/revoke`, {
    method: 'POST',
    headers: { authorization },
  });
  // 404: revoked already, in the studio's list, or made on another database.
  if (!revoked.ok && revoked.status !== 404) {
    throw new Error(
      `the new token is in place, but the old one could not be revoked (${await refusal(revoked)}): ` +
        'revoke it under Personal access tokens',
    );
  }
}
