import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config';
import { contextWindow, fullModelName } from './local-runtime';

const config = loadConfig({ LOCAL_LLM_MAX_CONTEXT_TOKENS: '6000', LOCAL_LLM_MAX_ANSWER_TOKENS: '2048' });

describe('the context window of a local model', () => {
  it('holds the budget plus the answer when the model does, or when its length is unknown', () => {
    expect(contextWindow(config, 131072)).toEqual({
      num_ctx: 8048,
      budget: 6000,
      answer: 2048,
      context_length: 131072,
      lowered: false,
    });
    expect(contextWindow(config, null)).toMatchObject({ num_ctx: 8048, budget: 6000, lowered: false });
    expect(contextWindow(config, 8048)).toMatchObject({ num_ctx: 8048, budget: 6000, lowered: false });
  });

  it('never asks for more than the model holds: the budget is lowered, the answer keeps at most half', () => {
    expect(contextWindow(config, 4096)).toEqual({
      num_ctx: 4096,
      budget: 2048,
      answer: 2048,
      context_length: 4096,
      lowered: true,
    });
    expect(contextWindow(config, 8000)).toMatchObject({ num_ctx: 8000, budget: 5952, answer: 2048, lowered: true });
    expect(contextWindow(config, 2048)).toMatchObject({ num_ctx: 2048, budget: 1024, answer: 1024, lowered: true });
  });

  it('names models as the runtime does', () => {
    expect(fullModelName('llama3.2')).toBe('llama3.2:latest');
    expect(fullModelName('qwen3:0.6b')).toBe('qwen3:0.6b');
  });
});
