import { describe, expect, it } from 'vitest';
import { eventsFromRows } from './events-from-rows';
import { applyEvent, applyEvents, emptyView, runView } from './run-view';
import type { RunDetail } from '@contracts/runs';

describe('the local runtime in the run view', () => {
  it("keeps a phase's reasoning with its transcript entry, apart from the answer", () => {
    const view = emptyView();
    applyEvent(view, { type: 'node_enter', node: 'dispatch' }, 1);
    applyEvent(view, { type: 'model_loading', node: 'dispatch', model: 'qwen3', expected_s: 4 }, 2);
    expect(view.loading).toEqual({ node: 'dispatch', model: 'qwen3', expectedS: 4 });
    applyEvent(view, { type: 'thinking', node: 'dispatch', text: 'let me ' }, 3);
    expect(view.loading).toBeNull();
    applyEvent(view, { type: 'thinking', node: 'dispatch', text: 'think' }, 4);
    applyEvent(view, { type: 'token', node: 'dispatch', text: 'The answer.' }, 5);
    expect(view.transcript).toEqual([{ node: 'dispatch', text: 'The answer.', thinking: 'let me think' }]);
  });

  it("ends a cold start's loading state with the phase's first token, one by one or in a frame's batch", () => {
    for (const fold of ['one by one', 'batched'] as const) {
      const view = emptyView();
      applyEvent(view, { type: 'node_enter', node: 'dispatch' }, 1);
      applyEvent(view, { type: 'model_loading', node: 'dispatch', model: 'qwen3', expected_s: 4 }, 2);
      const tokens = ['The ', 'answer.'].map((text, i) => ({
        id: i + 3,
        event: { type: 'token' as const, node: 'dispatch', text },
      }));
      if (fold === 'batched') applyEvents(view, tokens);
      else for (const { id, event } of tokens) applyEvent(view, event, id);
      expect(view.loading).toBeNull();
      expect(view.transcript).toEqual([{ node: 'dispatch', text: 'The answer.' }]);
    }
  });

  it("shows a model call's retries until the phase's first token", () => {
    const view = emptyView();
    applyEvent(view, { type: 'node_enter', node: 'analysis' }, 1);
    const retry = (n: number) =>
      ({
        type: 'model_retry',
        node: 'analysis',
        retry: n,
        retries: 4,
        wait_s: 1,
        reason: 'the provider answered 429',
      }) as const;
    applyEvent(view, retry(1), 2);
    applyEvent(view, retry(2), 3);
    expect(view.retrying).toEqual({
      node: 'analysis',
      retry: 2,
      retries: 4,
      waitS: 1,
      reason: 'the provider answered 429',
    });
    applyEvent(view, { type: 'token', node: 'analysis', text: 'Fine.' }, 4);
    expect(view.retrying).toBeNull();
    expect(view.transcript).toEqual([{ node: 'analysis', text: 'Fine.' }]);
  });

  it('keeps reasoning after a tool call with the answer after the call, not with the call', () => {
    const view = emptyView();
    applyEvent(view, { type: 'node_enter', node: 'intake' }, 1);
    applyEvent(
      view,
      {
        type: 'tool_call',
        node: 'intake',
        call_id: 'c0',
        tool: 'project.read_file',
        server: 'project',
        arguments: { path: 'README.md' },
        arguments_sha256: 'x',
        policy: 'allow',
      },
      2,
    );
    applyEvent(view, { type: 'thinking', node: 'intake', text: 'It is a demo.' }, 3);
    applyEvent(view, { type: 'token', node: 'intake', text: 'A demo.' }, 4);
    expect(view.transcript.map(({ toolCall, text, thinking }) => toolCall?.call_id ?? { text, thinking })).toEqual([
      'c0',
      { text: 'A demo.', thinking: 'It is a demo.' },
    ]);
  });

  it('shows node warnings and reasoning, live and from the node rows of a run whose events were pruned', () => {
    const view = emptyView();
    applyEvent(view, { type: 'node_warning', node: 'execute', code: 'answer_cut', message: 'stopped' }, 1);
    expect(view.warnings).toEqual(['Answer cut for execute: stopped.']);

    const node = {
      node_id: 'execute',
      status: 'completed' as const,
      output: 'partial answer',
      entered_at: 1,
      exited_at: 2,
      first_token_at: 1.5,
      queue_wait_ms: 0,
      prompt_tokens: 10,
      output_tokens: 5,
      warnings: [{ code: 'prompt_cut', message: 'the runtime cut the prompt' }],
      thinking: 'reasons',
    };
    const detail = {
      id: '00000000-0000-4000-8000-000000000001',
      forked_from: null,
      comparison_of: null,
      stop: null,
      sent_to: [],
      questions: [],
      agent_version: null,
      thread_id: '00000000-0000-4000-8000-000000000002',
      agent: 'summary',
      model: 'qwen3',
      status: 'completed',
      message: 'm',
      project_path: null,
      output: 'partial answer',
      error_detail: null,
      end_reason: null,
      started_at: new Date().toISOString(),
      finished_at: null,
      routes: [],
      pending_gate: null,
      resumable: false,
      decisions: [],
      approvals: null,
      usage: null,
      nodes: [node],
    } as RunDetail;
    const stored = runView(detail);
    for (const event of eventsFromRows(detail)) applyEvent(stored, event, 0);
    expect(stored.warnings).toEqual(['Prompt cut by the runtime for execute: the runtime cut the prompt.']);
    expect(stored.transcript).toEqual([{ node: 'execute', text: 'partial answer', thinking: 'reasons' }]);
  });
});
