import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { useIntegrationServer } from '../helpers/integration';
import { MCP_TOOLS } from '../mcp/mcp-client';

/**
 * /mcp checked by the MCP project's own tools, as installed in this folder: the conformance suite in server mode and
 * the Inspector's command line. Neither sends a token, so the server runs as on a desktop with auth off, on
 * loopback (the DNS-rebinding scenario needs a localhost address).
 */
const ctx = useIntegrationServer({ server: { AUTH_ENABLED: 'false' } });
const folder = import.meta.dirname;
const bin = (name: string) => path.join(folder, 'node_modules', '.bin', name);
const run = promisify(execFile);
const mcpUrl = () => `http://localhost:${ctx.server.port}/mcp`;

/** Runs a tool to its end: its exit code and everything it printed. */
async function tool(name: string, args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(bin(name), args, { cwd: folder, timeout: 150_000 });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? 1, output: `${failed.stdout ?? ''}${failed.stderr ?? ''}` };
  }
}

describe('the MCP conformance suite (server mode)', () => {
  it('passes initialize, ping, tools/list and DNS-rebinding protection; fails nothing but the fixture scenarios', async () => {
    const { code, output } = await tool('conformance', [
      'server',
      '--url',
      mcpUrl(),
      '--expected-failures',
      path.join(folder, 'expected-failures.yml'),
    ]);
    for (const scenario of ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection']) {
      expect(output).toMatch(new RegExp(`✓ ${scenario}: \\d+ passed, 0 failed`));
    }
    expect(output).toContain('Baseline check passed: all failures are expected.');
    expect(code, output).toBe(0);
  });
});

describe("the MCP Inspector's command line", () => {
  it('lists the tools of the running server', async () => {
    const { code, output } = await tool('mcp-inspector', [
      '--cli',
      mcpUrl(),
      '--transport',
      'http',
      '--method',
      'tools/list',
    ]);
    expect(code, output).toBe(0);
    const { tools } = JSON.parse(output) as { tools: { name: string }[] };
    expect(tools.map((t) => t.name).sort()).toEqual(MCP_TOOLS);
  });
});
