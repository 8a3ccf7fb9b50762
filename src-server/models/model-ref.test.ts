import { describe, expect, it } from 'vitest';
import { parseModel } from './model-ref';

describe('parseModel', () => {
  it('selects the provider by prefix', () => {
    expect(parseModel('llama3.2')).toEqual({ provider: 'local', name: 'llama3.2' });
    expect(parseModel('local:llama3.2')).toEqual({ provider: 'local', name: 'llama3.2' });
    expect(parseModel('cloud_a:gemini-2.5-flash')).toEqual({ provider: 'cloud_a', name: 'gemini-2.5-flash' });
    expect(parseModel('cloud_b:claude-sonnet-4-5')).toEqual({ provider: 'cloud_b', name: 'claude-sonnet-4-5' });
    expect(parseModel('cloud_c:gpt-5-mini')).toEqual({ provider: 'cloud_c', name: 'gpt-5-mini' });
  });

  it('keeps Ollama tags that contain a colon', () => {
    expect(parseModel('llama3.2:3b')).toEqual({ provider: 'local', name: 'llama3.2:3b' });
    expect(parseModel('local:qwen2.5:7b')).toEqual({ provider: 'local', name: 'qwen2.5:7b' });
  });
});
