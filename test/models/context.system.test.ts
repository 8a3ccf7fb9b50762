import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startSilentServer } from '../helpers/silent-server';
import { readEvents, type ReceivedEvent } from '../helpers/sse';
import { prompt, useContextServer } from './context-fixture';

/** A run's context from a git URL, cloned by git: the system suite's part of context.int.test.ts. */

const { ctx, dataDir, runOnProject } = useContextServer();

describe('run context from a git URL', () => {
  it('clones a git URL (a file:// bare repository) and its README reaches the prompt', async () => {
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-repo-'));
    const bare = `${work}-bare.git`;
    fs.writeFileSync(path.join(work, 'README.md'), '# Gizmo\nThe gizmo service answers questions about gizmos.');
    const git = (...args: string[]) => execFileSync('git', args, { cwd: work, stdio: 'pipe' });
    git('init', '-q', '-b', 'main');
    git('add', '.');
    git('-c', 'user.email=t@example.com', '-c', 'user.name=t', 'commit', '-q', '-m', 'readme');
    git('clone', '-q', '--bare', work, bare);
    try {
      const before = ctx.model.requests.length;
      const events = await runOnProject('summarise', `file://${bare}`);
      expect(events.at(-1)!.data.type).toBe('run_done');
      expect(prompt(ctx.model.requests[before]!)).toContain('The gizmo service answers questions about gizmos.');
    } finally {
      fs.rmSync(work, { recursive: true, force: true });
      fs.rmSync(bare, { recursive: true, force: true });
    }
  });

  it('stops the git clone when the run is cancelled, not when the clone times out', async () => {
    // A git host that accepts the connection and never answers.
    const silent = await startSilentServer();
    const server = await ctx.start({ DATA_DIR: dataDir, GIT_ALLOWED_HOSTS: '127.0.0.1' });
    try {
      const url = `http://127.0.0.1:${silent.port}/stuck.git`;
      const events: ReceivedEvent[] = [];
      const reading = readEvents(
        await server.request('/graphs/summary/run', { method: 'POST', json: { message: 'x', project_path: url } }),
        (event) => void events.push(event),
      );
      await expect.poll(() => silent.connections(), { timeout: 10_000 }).toBeGreaterThan(0);
      const runId = (events[0]!.data as { run_id: string }).run_id;
      expect((await server.request(`/runs/${runId}/cancel`, { method: 'POST', json: {} })).status).toBe(200);
      // git and its helper are gone within moments: the connection closes, well before the 60 s clone timeout.
      await expect.poll(() => silent.closed(), { timeout: 5000 }).toBe(silent.connections());
      await reading;
      expect(events.at(-1)!.data.type).toBe('run_cancelled');
    } finally {
      await server.close();
      await silent.close();
    }
  });
});
