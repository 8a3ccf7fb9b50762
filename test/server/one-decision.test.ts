import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Every door decides a stop through the approvals service's one decide() (docs/approvals.md): the HTTP routes, the
 * LangGraph door, the MCP tools (both protocol lines) and their questions, Slack's buttons and modals. The engine's
 * decision is taken in one place, that method, so a door that decided another way (with other checks, or none) would
 * show here; and http/ imports nothing of the engine (.dependency-cruiser.cjs,
 * doors-decide-through-the-approvals-service).
 */
const root = path.resolve(import.meta.dirname, '..', '..');

function sources(dir: string): string[] {
  return fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sources(relative);
    return /\.ts$/.test(entry.name) && !/\.test\.ts$/.test(entry.name) ? [relative] : [];
  });
}

const server = sources('src-server').filter((file) => !file.endsWith('test-harness.ts'));
const read = (file: string) => fs.readFileSync(path.join(root, file), 'utf8');
const callsOf = (pattern: RegExp) => server.flatMap((file) => [...read(file).matchAll(pattern)].map(() => file)).sort();

describe('one decision for every door', () => {
  it("calls the engine's decide from the approvals service's decide() alone", () => {
    expect(callsOf(/\bengine\.decide\(/g)).toEqual(['src-server/services/approvals.service.ts']);
    const service = read('src-server/services/approvals.service.ts');
    const method = service.slice(service.indexOf('    async decide('), service.indexOf('    async mayDecide('));
    expect(method).toContain('engine.decide(');
  });

  it('has each door decide through approvals.decide, and no other decision method', () => {
    for (const door of [
      'src-server/http/approvals.router.ts',
      'src-server/http/langgraph/lg-door.ts',
      'src-server/http/mcp/common-tools.ts',
      'src-server/http/mcp/elicitation-answers.ts',
      'src-server/http/mcp/modern/modern-run-agent.ts',
      'src-server/services/slack.service.ts',
    ]) {
      expect(read(door), door).toMatch(/\bapprovals\.decide\(/);
    }
    expect(callsOf(/\bapprovals\.decide[A-Z]\w*\(/g)).toEqual([]);
  });
});
