import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { toolAgent, writeFixtureCatalog } from '../helpers/fixture-assets';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { readEvents } from '../helpers/sse';

/**
 * The project's git tools in a run, end to end (the fixture agent `tool-review` on a real server and PostgreSQL): the
 * system suite's part of tool-runs.int.test.ts, where git is installed.
 */

const ctx = useIntegrationServer({ server: false });
let server: TestServer;
let project: string;
let toolCatalog: string;

beforeAll(async () => {
  toolCatalog = await writeFixtureCatalog([toolAgent]);
  server = await ctx.start({ GENERATED_DIR: toolCatalog });
});
afterAll(async () => {
  await server?.close();
  fs.rmSync(toolCatalog, { recursive: true, force: true });
});
beforeEach(() => {
  project = fs.mkdtempSync(path.join(os.tmpdir(), 'tool-runs-'));
  fs.writeFileSync(path.join(project, 'README.md'), '# Demo\n');
});
afterEach(() => fs.rmSync(project, { recursive: true, force: true }));

const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args });

describe('the project git tools in a run', () => {
  it('run nothing a planted .git/config names: a file-system monitor, an external diff, a text converter, a filter', async () => {
    const git = (...args: string[]) =>
      execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd: project });
    git('init', '-q');
    git('add', '.');
    git('commit', '-qm', 'first');
    fs.writeFileSync(path.join(project, 'README.md'), '# Demo, changed\n');
    const marker = path.join(os.tmpdir(), `planted-${path.basename(project)}`);
    const script = path.join(project, 'planted.sh');
    fs.writeFileSync(script, `#!/bin/sh\ntouch ${marker}\ncat\n`, { mode: 0o755 });
    fs.appendFileSync(
      path.join(project, '.git', 'config'),
      `[core]\n\tfsmonitor = ${script}\n[diff]\n\texternal = ${script}\n[diff "planted"]\n\ttextconv = ${script}\n` +
        `[filter ""]\n\tclean = ${script}\n\tsmudge = ${script}\n`,
    );
    fs.writeFileSync(path.join(project, '.gitattributes'), 'README.md diff=planted filter=\n');
    ctx.model.toolTurns = [
      [
        call('project__git_diff', {}),
        call('project__git_log', {}),
        call('project__git_show', { revision: 'HEAD', path: 'README.md' }),
      ],
    ];
    const events = await readEvents(
      await server.request('/graphs/tool-review/run', {
        method: 'POST',
        json: { message: 'review the change', project_path: project },
      }),
    );
    const results = events
      .filter((e) => e.data.type === 'tool_result')
      .map((e) => e.data as { text: string; is_error: boolean });
    expect(results.map((result) => result.is_error)).toEqual([false, false, false]);
    expect(results[0]!.text).toContain('+# Demo, changed');
    expect(results[1]!.text).toMatch(/ t: first\n/);
    expect(results[2]!.text).toContain('# Demo');
    expect(fs.existsSync(marker)).toBe(false);
  });
});
