import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { toolDefinition, toolResult } from './mcp-tool-mapping';

const tool = (annotations?: Tool['annotations']): Tool => ({
  name: 'write',
  inputSchema: { type: 'object' },
  ...(annotations ? { annotations } : {}),
});

describe('toolDefinition', () => {
  it('takes MCP defaults for hints a tool does not give: not read-only, not idempotent, destructive', () => {
    expect(toolDefinition('files', tool())).toEqual({
      name: 'files.write',
      server: 'files',
      tool: 'write',
      description: '',
      inputSchema: { type: 'object' },
      annotations: { read_only: false, idempotent: false, destructive: true },
    });
  });

  it('reads a read-only tool as idempotent and not destructive, whatever its other hints say', () => {
    expect(toolDefinition('files', tool({ readOnlyHint: true, destructiveHint: true })).annotations).toEqual({
      read_only: true,
      idempotent: true,
      destructive: false,
    });
  });

  it('keeps the hints of a tool that changes things', () => {
    expect(toolDefinition('files', tool({ idempotentHint: true, destructiveHint: false })).annotations).toEqual({
      read_only: false,
      idempotent: true,
      destructive: false,
    });
  });
});

describe('toolResult', () => {
  it('notes embedded resources and audio instead of their data', () => {
    const result = toolResult({
      content: [
        { type: 'resource', resource: { uri: 'file:///a.md', text: 'body' } },
        { type: 'audio', data: 'AAAA', mimeType: 'audio/wav' },
      ],
    });
    expect(result).toEqual({ text: '[resource file:///a.md]\n[audio omitted]', is_error: false });
  });

  it('gives structured content as JSON when there is no content', () => {
    expect(toolResult({ content: [], structuredContent: { count: 2 } })).toEqual({
      text: '{"count":2}',
      is_error: false,
    });
  });
});
