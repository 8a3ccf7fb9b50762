import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CUT_MARK, estimateTokens } from '../../src-server/models/context-budget';
import { readEvents } from '../helpers/sse';
import { prompt, useContextServer } from './context-fixture';

const { ctx, runOnProject } = useContextServer();

describe('run context', () => {
  it('trims a long thread to the budget and warns with context_trimmed', async () => {
    ctx.model.reply(['x'.repeat(400)]);
    let threadId: string | undefined;
    for (let i = 0; i < 4; i++) {
      const events = await readEvents(
        await ctx.server.request('/graphs/summary/run', {
          method: 'POST',
          json: { message: `turn ${i} ${'y'.repeat(300)}`, thread_id: threadId },
        }),
      );
      threadId ??= (events[0]!.data as { thread_id: string }).thread_id;
      expect(events.at(-1)!.data.type).toBe('run_done');
    }
    const before = ctx.model.requests.length;
    const events = await readEvents(
      await ctx.server.request('/graphs/summary/run', {
        method: 'POST',
        json: { message: 'the newest question', thread_id: threadId },
      }),
    );
    const trimmed = events.find((e) => e.name === 'context_trimmed');
    expect(trimmed?.data).toMatchObject({ type: 'context_trimmed', node: 'dispatch', budget: 600 });
    const report = trimmed!.data as {
      dropped_messages: number;
      estimated_tokens_before: number;
      estimated_tokens_after: number;
    };
    expect(report.dropped_messages).toBeGreaterThan(0);
    expect(report.estimated_tokens_before).toBeGreaterThan(600);
    expect(report.estimated_tokens_after).toBeLessThanOrEqual(600);
    // The model got the system instructions and the newest question, not the oldest turns.
    const sent = ctx.model.requests[before]!.messages as { role: string; content: string }[];
    expect(sent[0]!.role).toBe('system');
    expect(sent.at(-1)!.content).toContain('the newest question');
    expect(prompt(ctx.model.requests[before]!)).not.toContain('turn 0');
  });

  it('cuts a huge project context inside the newest message, so that the call stays under the budget', async () => {
    const project = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-huge-'));
    fs.writeFileSync(path.join(project, 'README.md'), `# Huge\n${'The huge project has many words. '.repeat(2000)}`);
    try {
      ctx.model.reply(['summary']);
      const before = ctx.model.requests.length;
      const question = `summarise the project ${'and be thorough '.repeat(70)}in detail`;
      const events = await runOnProject(question, project);
      expect(events.at(-1)!.data.type).toBe('run_done');
      const trimmed = events.find((e) => e.name === 'context_trimmed');
      expect(trimmed?.data).toMatchObject({
        type: 'context_trimmed',
        budget: 600,
        dropped_messages: 0,
        trimmed_parts: ['project_context'],
      });
      const report = trimmed!.data as { estimated_tokens_before: number; estimated_tokens_after: number };
      expect(report.estimated_tokens_before).toBeGreaterThan(600);
      expect(report.estimated_tokens_after).toBeLessThanOrEqual(600);
      // What the stand-in received is under the budget, by the same estimate, and keeps the whole question.
      const sent = ctx.model.requests[before]!.messages as { role: 'user' | 'system'; content: string }[];
      expect(estimateTokens(sent)).toBeLessThanOrEqual(600);
      expect(sent.at(-1)!.content).toContain(question);
      expect(sent.at(-1)!.content).toContain('The huge project has many words.');
      expect(sent.at(-1)!.content).toContain(CUT_MARK);
    } finally {
      fs.rmSync(project, { recursive: true, force: true });
    }
  });

  it('fails the run, sending nothing, when the run message alone is over the budget', async () => {
    const before = ctx.model.requests.length;
    const events = await readEvents(
      await ctx.server.request('/graphs/summary/run', { method: 'POST', json: { message: 'q'.repeat(4000) } }),
    );
    expect(events.map((e) => e.name)).toContain('context_trimmed');
    expect((events.at(-1)!.data as { error_detail?: string }).error_detail).toMatch(
      /^ContextBudgetError: the system instructions and the run's message alone need about \d+ tokens, more than LOCAL_LLM_MAX_CONTEXT_TOKENS \(600\) allows$/,
    );
    expect(ctx.model.requests.length).toBe(before);
  });

  it('fails the run with a clear message for a missing folder', async () => {
    const events = await runOnProject('x', '/no/such/project');
    expect(events.at(-1)!.data).toMatchObject({
      type: 'run_error',
      error_detail: 'ProjectPathError: project folder /no/such/project does not exist',
    });
  });

  it("fails the run for a git URL on the server's own network, with nothing from git in the answer", async () => {
    const events = await runOnProject('x', 'http://127.0.0.1:5432/');
    expect(events.at(-1)!.data).toMatchObject({
      type: 'run_error',
      error_detail:
        "ProjectPathError: git URL http://127.0.0.1:5432/ leads to an address on the server's own network " +
        '(loopback, link-local or private), which is not cloned: GIT_ALLOWED_HOSTS can allow 127.0.0.1',
    });
  });
});
