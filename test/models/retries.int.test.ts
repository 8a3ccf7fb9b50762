import { describe, expect, it } from 'vitest';
import { useIntegrationServer } from '../helpers/integration';
import { readEvents, type ReceivedEvent } from '../helpers/sse';

/**
 * Model calls tried again after a passing failure (docs/models.md#retries), each provider through its real client and
 * wire protocol against the stand-in: a busy provider's 429 with Retry-After, a runtime's 503, and a failure after the
 * answer began, which is never tried again.
 */
const ctx = useIntegrationServer({
  server: ({ model }) => ({
    CLOUD_B_API_KEY: 'anthropic-test-key',
    CLOUD_B_BASE_URL: model.url,
    CLOUD_C_API_KEY: 'openai-test-key',
    CLOUD_C_BASE_URL: `${model.url}/v1`,
    MODEL_RETRY_MAX_WAIT_S: '5',
  }),
});

async function run(model: string): Promise<ReceivedEvent[]> {
  return readEvents(
    await ctx.server.request('/graphs/summary/run', { method: 'POST', json: { message: 'hi', model } }),
  );
}

const retriesOf = (events: ReceivedEvent[]) => events.filter((e) => e.data.type === 'model_retry').map((e) => e.data);

describe('a model call that fails before it streams', () => {
  it.each([
    ['cloud_c (OpenAI Responses)', 'cloud_c:gpt-test'],
    ['cloud_b (Anthropic Messages)', 'cloud_b:claude-test'],
  ])('%s: two 429s with Retry-After, then the answer: the run succeeds, its stream shows both', async (_n, model) => {
    ctx.model.reply(['All ', 'good.']);
    ctx.model.refusals = [
      { status: 429, retryAfterS: 1, message: 'rate limited' },
      { status: 429, retryAfterS: 1, message: 'rate limited' },
    ];
    const before = ctx.model.recorded.length;
    const began = Date.now();
    const events = await run(model);
    expect(events.at(-1)!.data).toMatchObject({ type: 'run_done', output: 'All good.' });
    expect(retriesOf(events)).toEqual([
      { type: 'model_retry', node: 'dispatch', retry: 1, retries: 3, wait_s: 1, reason: 'the provider answered 429' },
      { type: 'model_retry', node: 'dispatch', retry: 2, retries: 3, wait_s: 1, reason: 'the provider answered 429' },
    ]);
    // Each retry came after the wait the provider asked for; three phases, the first one asked three times.
    expect(Date.now() - began).toBeGreaterThanOrEqual(2000);
    expect(ctx.model.recorded.length - before).toBe(5);
    // The retries come before the phase's first token, which streams once.
    const order = events.map((e) => e.data.type).filter((t) => t === 'model_retry' || t === 'token');
    expect(order.slice(0, 3)).toEqual(['model_retry', 'model_retry', 'token']);
  });

  it('the local runtime answering 503 while it restarts is asked again within the same slot', async () => {
    ctx.model.reply(['Back.']);
    ctx.model.refusals = [{ status: 503, message: 'server busy, please try again' }];
    const events = await run('fake-model');
    expect(events.at(-1)!.data).toMatchObject({ type: 'run_done', output: 'Back.' });
    expect(retriesOf(events)).toEqual([
      {
        type: 'model_retry',
        node: 'dispatch',
        retry: 1,
        retries: 3,
        wait_s: expect.any(Number),
        reason: 'the provider answered 503',
      },
    ]);
  });

  it('a Retry-After longer than MODEL_RETRY_MAX_WAIT_S is not waited for: the run fails with the answer', async () => {
    ctx.model.reply(['Never.']);
    ctx.model.refusals = [{ status: 429, retryAfterS: 60, message: 'come back in a minute' }];
    const events = await run('cloud_c:gpt-test');
    expect(retriesOf(events)).toEqual([]);
    expect(events.at(-1)!.data).toMatchObject({ type: 'run_error' });
    expect((events.at(-1)!.data as { error_detail: string }).error_detail).toMatch(/429/);
  });

  it('a refusal that is no passing failure (400) is never tried again', async () => {
    ctx.model.refusals = [{ status: 400, message: 'bad request' }];
    const before = ctx.model.recorded.length;
    const events = await run('cloud_c:gpt-test');
    expect(retriesOf(events)).toEqual([]);
    expect(events.at(-1)!.data).toMatchObject({ type: 'run_error' });
    expect(ctx.model.recorded.length - before).toBe(1);
  });
});

describe('a model call that fails after it streamed', () => {
  it.each([
    ['cloud_c (OpenAI Responses)', 'cloud_c:gpt-test'],
    ['the local runtime', 'fake-model'],
  ])('%s: is not tried again, the run fails with what streamed shown', async (_n, model) => {
    ctx.model.reply(['One ', 'two ', 'three ', 'four.']);
    ctx.model.cutAfterTokens = 2;
    const before = ctx.model.recorded.length;
    const events = await run(model);
    expect(retriesOf(events)).toEqual([]);
    expect(events.filter((e) => e.data.type === 'token').map((e) => (e.data as { text: string }).text)).toEqual([
      'One ',
      'two ',
    ]);
    expect(events.at(-1)!.data).toMatchObject({ type: 'run_error' });
    expect(ctx.model.recorded.length - before).toBe(1);
  });
});
