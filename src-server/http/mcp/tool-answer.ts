import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { DATABASE_UNAVAILABLE, ServiceError } from '../../contracts/errors';
import { isDatabaseUnavailable } from '../../storage/database-unavailable';
import { getLogger } from '../../log';

const log = getLogger('svc.api');

/**
 * A tool's answer: its structured result (and the same as JSON text, for clients that read only text), or an error
 * result with the message the HTTP API would answer. What the caller may not see reads as not found, exactly as there.
 */
export async function toolAnswer(work: () => Promise<Record<string, unknown>>): Promise<CallToolResult> {
  try {
    const structured = await work();
    return { content: [{ type: 'text', text: JSON.stringify(structured, null, 2) }], structuredContent: structured };
  } catch (error) {
    let text = 'internal server error';
    if (error instanceof ServiceError) text = error.message;
    else if (isDatabaseUnavailable(error)) text = DATABASE_UNAVAILABLE.message;
    else log.error('an MCP tool call failed', error);
    return { isError: true, content: [{ type: 'text', text }] };
  }
}
