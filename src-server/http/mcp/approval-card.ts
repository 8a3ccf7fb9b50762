import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';

const URI = 'ui://agent-workflow/approval-card';

/**
 * The MCP Apps extension's names, as `@modelcontextprotocol/ext-apps/server` exports them: written here rather than
 * imported, so that the server does not load the extension's package at its start for two strings (the package builds
 * the card, build/build-mcp-apps.mjs).
 */
const RESOURCE_MIME_TYPE = 'text/html;profile=mcp-app';
const RESOURCE_URI_META_KEY = 'ui/resourceUri';

/** Where build/build.mjs (`mcp-apps`) writes the card: one HTML file, its script and styles inlined. */
const BUILT = path.join('out', 'mcp-apps', 'approval-card.html');

/**
 * The card's rendering wishes (MCP Apps `_meta.ui`): no `csp`, so the host applies the extension's restrictive
 * default (no network at all), which is all the card needs; a border, as it draws none around itself.
 */
const RESOURCE_UI = { prefersBorder: true };

/**
 * The built card, found upward from here: this file runs from src-server/http/mcp under tsx and vitest, and bundled
 * from out/server (npm start) or out/main (the desktop app), each below the folder that holds out/.
 */
function builtCard(): string | undefined {
  for (let dir = import.meta.dirname; ; dir = path.dirname(dir)) {
    const file = path.join(dir, BUILT);
    if (existsSync(file)) return file;
    if (path.dirname(dir) === dir) return undefined;
  }
}

/**
 * The approval card (docs/mcp.md#the-approval-card-mcp-apps): an MCP App that hosts with the MCP Apps extension show
 * for a run or the list of approvals, where a person decides through decide_approval. It is registered with the SDK
 * this server runs on (v1): the extension's own helpers are typed for the v2 server, and add nothing but the MIME
 * type and the metadata keys above. Answers the `_meta` of the tools whose results it shows; hosts
 * without the extension ignore it and read the same text and structured result as before.
 */
export function registerApprovalCard(server: McpServer): Record<string, unknown> {
  server.registerResource(
    'approval-card',
    URI,
    {
      title: 'Approval card',
      description:
        'Shows what a run waits for (a gate and its text, or a tool call and its arguments) with buttons to approve, ' +
        'edit, respond or reject it.',
      mimeType: RESOURCE_MIME_TYPE,
      _meta: { ui: RESOURCE_UI },
    },
    async (uri) => {
      const file = builtCard();
      if (!file) throw new Error('the approval card is not built: run `node build/build.mjs mcp-apps`');
      const text = await readFile(file, 'utf8');
      return { contents: [{ uri: uri.href, mimeType: RESOURCE_MIME_TYPE, text, _meta: { ui: RESOURCE_UI } }] };
    },
  );
  // The stable extension (2026-01-26) reads `ui.resourceUri`; the flat key is its deprecated form, which hosts built
  // on the drafts read, and which the extension's registerAppTool still writes beside it.
  return { ui: { resourceUri: URI }, [RESOURCE_URI_META_KEY]: URI };
}
