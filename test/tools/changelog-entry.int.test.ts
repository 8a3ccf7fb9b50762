import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { compileAssets, writeGenerated } from '../../src-server/assets/asset-compiler';
import type { RunEvent } from '../../src-server/contracts/events';
import { useIntegrationServer } from '../helpers/integration';
import { readEvents, type ReceivedEvent } from '../helpers/sse';

/**
 * The shipped `changelog-entry` agent (assets/agents/changelog-entry.md), compiled as `npm run build:assets` compiles
 * it, run end to end: its phases read the project without asking, and its output phase's write waits for a person
 * (docs/tools.md#deciding-a-call) even after the gate approved the entry.
 */
const root = path.resolve(import.meta.dirname, '..', '..');
const shippedCatalog = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-shipped-'));
const ctx = useIntegrationServer({
  catalog: false,
  server: () => {
    writeGenerated(path.join(shippedCatalog, 'generated'), compileAssets(path.join(root, 'assets')));
    return { GENERATED_DIR: path.join(shippedCatalog, 'generated') };
  },
});
afterAll(() => fs.rmSync(shippedCatalog, { recursive: true, force: true }));

const CHANGELOG = '# Changelog\n\n## [1.0.0] - 2026-01-05\n\n### Added\n\n- Export to CSV.\n';
const WITH_ENTRY =
  '# Changelog\n\n## [Unreleased]\n\n### Fixed\n\n- Exports no longer drop empty rows.\n\n' +
  '## [1.0.0] - 2026-01-05\n\n### Added\n\n- Export to CSV.\n';

let project: string;
beforeEach(() => {
  project = fs.mkdtempSync(path.join(os.tmpdir(), 'changelog-entry-'));
  fs.writeFileSync(path.join(project, 'CHANGELOG.md'), CHANGELOG);
});
afterEach(() => fs.rmSync(project, { recursive: true, force: true }));

const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args });
const ofType = <T extends RunEvent['type']>(events: ReceivedEvent[], type: T) =>
  events.map((e) => e.data).filter((d): d is Extract<RunEvent, { type: T }> => d.type === type);
const follow = async (runId: string, after: number) =>
  readEvents(await ctx.server.request(`/runs/${runId}/stream`, { headers: { 'last-event-id': String(after) } }));
const changelog = () => fs.readFileSync(path.join(project, 'CHANGELOG.md'), 'utf8');

describe('the shipped changelog-entry agent', () => {
  it('reads without asking, and after the gate its write waits for a person and runs once when approved', async () => {
    ctx.model.toolTurns = [[call('project__read_file', { path: 'CHANGELOG.md' })]];
    ctx.model.reply(['Fixed: exports no longer drop empty rows.']);
    const toGate = await readEvents(
      await ctx.server.request('/graphs/changelog-entry/run', {
        method: 'POST',
        json: { message: 'Changelog entry for the export fix', project_path: project },
      }),
    );
    const { run_id: runId, thread_id: threadId } = toGate[0]!.data as { run_id: string; thread_id: string };
    expect(ofType(toGate, 'tool_call')).toEqual([
      expect.objectContaining({ node: 'intake', tool: 'project.read_file', policy: 'allow' }),
    ]);
    expect(ofType(toGate, 'tool_result')[0]).toMatchObject({ is_error: false, text: expect.stringContaining('CSV') });
    expect(toGate.at(-1)!.data).toMatchObject({
      type: 'gate_waiting',
      node: 'gate',
      question: 'Add this entry to the changelog?',
    });

    // The gate approves the entry; the output phase's write of the whole file still asks, and nothing is written.
    ctx.model.toolTurns = [[call('project__write_file', { path: 'CHANGELOG.md', content: WITH_ENTRY })]];
    const approved = await ctx.server.request(`/threads/${threadId}/gates/gate/approve`, { method: 'POST', json: {} });
    expect(approved.status).toBe(202);
    const toCall = await follow(runId, toGate.at(-1)!.id);
    expect(ofType(toCall, 'tool_call')).toEqual([
      expect.objectContaining({ node: 'output', tool: 'project.write_file', policy: 'ask' }),
    ]);
    const waiting = toCall.at(-1)!.data;
    expect(waiting).toMatchObject({
      type: 'tool_waiting',
      node: 'output',
      decide_role: 'member',
      tool_call: { tool: 'project.write_file', arguments: { path: 'CHANGELOG.md', content: WITH_ENTRY } },
    });
    const { call_id: callId } = (waiting as Extract<RunEvent, { type: 'tool_waiting' }>).tool_call!;
    expect(ofType(toCall, 'tool_result')).toEqual([]);
    expect(changelog()).toBe(CHANGELOG);

    ctx.model.reply(['Added the entry under Unreleased in CHANGELOG.md.']);
    const decided = await ctx.server.request(`/threads/${threadId}/tool-calls/${callId}/approve`, {
      method: 'POST',
      json: {},
    });
    expect(decided.status).toBe(202);
    const toEnd = await follow(runId, toCall.at(-1)!.id);
    expect(toEnd.at(-1)!.data).toMatchObject({
      type: 'run_done',
      output: 'Added the entry under Unreleased in CHANGELOG.md.',
    });
    expect(changelog()).toBe(WITH_ENTRY);

    // Written once: one result for the call in the whole run, and one start in its record.
    const whole = await follow(runId, 0);
    expect(ofType(whole, 'tool_result').filter((r) => r.call_id === callId)).toEqual([
      expect.objectContaining({ tool: 'project.write_file', is_error: false }),
    ]);
    const { rows } = await ctx.server.pool.query<{ attempts: number }>(
      'SELECT attempts FROM svc_tool_calls WHERE id = $1',
      [callId],
    );
    expect(rows).toEqual([{ attempts: 1 }]);
  });
});
