import type { CallToolResult, ContentBlock, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ToolDefinition, ToolResult } from '../contracts/tools';
import { capToolText } from './tool-result';

/**
 * An MCP tool as the model sees it. The hints take MCP's defaults (not read-only, not idempotent, destructive); MCP
 * gives the last two a meaning only for a tool that is not read-only, and a tool that changes nothing neither
 * destroys nor differs when repeated, so a read-only tool is idempotent and not destructive whatever else it says.
 */
export function toolDefinition(server: string, tool: Tool): ToolDefinition {
  const readOnly = tool.annotations?.readOnlyHint ?? false;
  return {
    name: `${server}.${tool.name}`,
    server,
    tool: tool.name,
    description: tool.description ?? tool.annotations?.title ?? tool.title ?? '',
    inputSchema: tool.inputSchema,
    annotations: {
      read_only: readOnly,
      idempotent: readOnly || (tool.annotations?.idempotentHint ?? false),
      destructive: !readOnly && (tool.annotations?.destructiveHint ?? true),
    },
  };
}

/** The text of one content item: what is not text becomes a short note, as the model reads text only. */
function contentText(item: ContentBlock): string {
  switch (item.type) {
    case 'text':
      return item.text;
    case 'image':
      return '[image omitted]';
    case 'audio':
      return '[audio omitted]';
    case 'resource':
      return `[resource ${item.resource.uri}]`;
    case 'resource_link':
      return `[resource ${item.uri}]`;
  }
}

/**
 * A tool call's answer: its content as text, one item a line, capped. A result with no content but structured
 * content (or an older server's `toolResult`) is given as that JSON.
 */
export function toolResult(result: CallToolResult | { toolResult: unknown }): ToolResult {
  if (!('content' in result)) return { text: capToolText(JSON.stringify(result.toolResult)), is_error: false };
  const text = result.content.length
    ? result.content.map(contentText).join('\n')
    : result.structuredContent
      ? JSON.stringify(result.structuredContent)
      : '';
  return { text: capToolText(text), is_error: result.isError === true };
}
