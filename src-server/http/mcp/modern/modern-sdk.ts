import type * as V2Server from '@modelcontextprotocol/server';

/** The MCP SDK's v2 server (`@modelcontextprotocol/server`), which serves protocol 2026-07-28 here. */
export type ModernSdk = typeof V2Server;

let loading: Promise<ModernSdk> | undefined;

/**
 * Loads the v2 server at the first 2026-07-28 request, as the v1 server waits for the first request to /mcp
 * (mcp-server-sdk.ts): a service nobody reaches over MCP never pays its import.
 */
export function loadModernSdk(): Promise<ModernSdk> {
  loading ??= import('@modelcontextprotocol/server');
  return loading;
}

/** The revision this door speaks: the first of the 2026 line, whose requests each carry their own `_meta` envelope. */
export const MODERN_REVISION = '2026-07-28';
/** Where a 2026 request names its revision (the SDK's PROTOCOL_VERSION_META_KEY), read before the SDK is loaded. */
export const PROTOCOL_VERSION_KEY = 'io.modelcontextprotocol/protocolVersion';
export const CLIENT_CAPABILITIES_KEY = 'io.modelcontextprotocol/clientCapabilities';
