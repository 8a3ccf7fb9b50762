/**
 * The MCP protocol revisions whose shapes differ in what this server sends (docs/mcp.md#protocol-versions). A
 * revision is a date: later ones sort after earlier ones as strings.
 */

/** Elicitation (`elicitation/create`, a flat form with `enum` and `enumNames`) came with this revision. */
export const ELICITATION_SINCE = '2025-06-18';
/** `mode: "form"` and titled `oneOf` options in a form came with this one. */
export const FORM_MODE_SINCE = '2025-11-25';
/** JSON-RPC batches were removed in 2025-06-18: a session of that revision or later sends one message per request. */
export const BATCHES_REMOVED_IN = '2025-06-18';

export const atLeast = (version: string, since: string): boolean => version >= since;
