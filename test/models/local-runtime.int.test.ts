import { describe, expect, it } from 'vitest';
import type { RunDetail } from '../../src-server/contracts/runs';
import { DEFAULT_NUM_CTX, numberedTokens } from '../fixtures/fake-models';
import { useIntegrationServer } from '../helpers/integration';
import { readEvents, type ReceivedEvent } from '../helpers/sse';

// Default budget (6,000 estimated tokens); room for 100 answer tokens, so that a cut answer is quick to script.
const ctx = useIntegrationServer({ server: { LOCAL_LLM_MAX_ANSWER_TOKENS: '100' } });

/** Runs the three-phase summary command (dispatch → execute → summarize) with `model`; its events. */
async function run(message: string, model?: string): Promise<ReceivedEvent[]> {
  return readEvents(await ctx.server.request('/graphs/summary/run', { method: 'POST', json: { message, model } }));
}

const runIdOf = (events: ReceivedEvent[]) => (events[0]!.data as { run_id: string }).run_id;

async function detail(runId: string): Promise<RunDetail> {
  return (await ctx.server.request(`/runs/${runId}`)).json() as Promise<RunDetail>;
}

/** A model only these tests use, so that what the service keeps of one model does not leak between tests. */
function addModel(name: string, setup: { contextLength?: number; thinking?: boolean; loadDelayMs?: number } = {}) {
  ctx.model.models.push(name);
  if (setup.contextLength) ctx.model.contextLengths[name] = setup.contextLength;
  if (setup.thinking) ctx.model.thinkingModels.push(name);
  if (setup.loadDelayMs) ctx.model.loadDelayMs[name] = setup.loadDelayMs;
  return name;
}

const promptsOf = (model: string) => ctx.model.prompts.filter((p) => p.model === model);

describe('the local runtime as it really behaves', () => {
  it('sends a num_ctx that holds a 5,000-token prompt, which the runtime would otherwise cut at 4,096', async () => {
    const model = addModel('wide-model');
    // About 5,000 tokens by the service's estimate and the stand-in's count alike.
    const message = `Start of the request. ${'words of the project context '.repeat(700)}End of the request.`;
    ctx.model.reply(['done']);
    const events = await run(message, model);
    expect(events.at(-1)!.data.type).toBe('run_done');
    const [first] = promptsOf(model);
    expect(first!.sent_tokens).toBeGreaterThan(5000);
    expect(first!.sent_tokens).toBeGreaterThan(DEFAULT_NUM_CTX);
    // The whole prompt was read: the window is the budget plus the answer's room, the system instructions survive.
    expect(first!.num_ctx).toBe(6000 + 100);
    expect(first!.used_tokens).toBe(first!.sent_tokens);
    expect(first!.used).toMatch(/^system: /);
    expect(first!.used).toContain('Start of the request.');
    // Constant per model: every call of the run asked for the same window.
    expect(new Set(promptsOf(model).map((p) => p.num_ctx))).toEqual(new Set([6100]));
    expect(events.some((e) => e.data.type === 'node_warning')).toBe(false);
  });

  it('lowers the budget for a model that holds less, sends no call over it, and says so on /models', async () => {
    const model = addModel('small-model', { contextLength: 1500 });
    const models = await (await ctx.server.request('/models')).json();
    const listed = models.providers[0].models.find((m: { id: string }) => m.id === model);
    expect(listed.context).toMatchObject({
      context_length: 1500,
      num_ctx: 1500,
      budget: 1400,
      answer_tokens: 100,
      lowered: true,
    });
    expect(listed.context.message).toContain('small-model holds 1500 tokens');
    // A model that holds enough keeps the configured budget.
    expect(models.providers[0].models.find((m: { id: string }) => m.id === 'fake-model').context).toMatchObject({
      budget: 6000,
      lowered: false,
    });

    // Each phase answers about 1,000 tokens: the last phase's prompt (two earlier outputs) is over 1,400.
    ctx.model.reply(['long answer '.repeat(330)]);
    const events = await run('Summarise the module', model);
    expect(events.at(-1)!.data.type).toBe('run_done');
    const trimmed = events.find((e) => e.data.type === 'context_trimmed')?.data as { budget: number } | undefined;
    expect(trimmed?.budget).toBe(1400);
    for (const prompt of promptsOf(model)) {
      expect(prompt.num_ctx).toBeLessThanOrEqual(1500);
      expect(prompt.sent_tokens).toBeLessThanOrEqual(1400);
      expect(prompt.used_tokens).toBe(prompt.sent_tokens);
    }
  });

  it('warns when the answer stopped at its length limit, and keeps the warning with the node', async () => {
    ctx.model.reply(numberedTokens(150, 'w'));
    const events = await run('Write at length');
    expect(events.at(-1)!.data.type).toBe('run_done');
    const warnings = events.filter((e) => e.data.type === 'node_warning').map((e) => e.data);
    expect(warnings).toHaveLength(3);
    expect(warnings[0]).toMatchObject({ type: 'node_warning', node: 'dispatch', code: 'answer_cut' });
    const nodes = (await detail(runIdOf(events))).nodes;
    expect(nodes[0]!.warnings).toEqual([
      { code: 'answer_cut', message: expect.stringContaining('after 100 tokens') as unknown as string },
    ]);
    expect(nodes[0]!.output).toBe(numberedTokens(100, 'w').join(''));
  });

  it('warns when the runtime cut the prompt anyway (its tokenizer counts more than the estimate)', async () => {
    const model = addModel('dense-model');
    ctx.model.charsPerToken[model] = 2;
    ctx.model.reply(['ok']);
    const events = await run(`Question ${'dense text '.repeat(1500)}`, model);
    const warning = events.find((e) => e.data.type === 'node_warning')?.data;
    expect(warning).toMatchObject({ node: 'dispatch', code: 'prompt_cut' });
    expect(promptsOf(model)[0]!.used).not.toMatch(/^system: /);
    const nodes = (await detail(runIdOf(events))).nodes;
    expect(nodes[0]!.warnings.map((w) => w.code)).toContain('prompt_cut');
  });

  it("streams a thinking model's reasoning apart: stored with the node, absent from the output and the next prompt", async () => {
    const model = addModel('thinking-model', { thinking: true });
    ctx.model.reply(['the answer'], 0, ['weighing ', 'SECRET-REASONING ', 'options']);
    const events = await run('Think first', model);
    expect(events.at(-1)!.data.type).toBe('run_done');
    expect(ctx.model.requests.filter((r) => r.model === model).every((r) => r.think === true)).toBe(true);
    const thinking = events.filter((e) => e.data.type === 'thinking' && e.data.node === 'dispatch');
    expect(thinking.map((e) => (e.data as { text: string }).text).join('')).toBe('weighing SECRET-REASONING options');
    const tokens = events.filter((e) => e.data.type === 'token' && e.data.node === 'dispatch');
    expect(tokens.map((e) => (e.data as { text: string }).text).join('')).toBe('the answer');

    const nodes = (await detail(runIdOf(events))).nodes;
    expect(nodes.map((n) => [n.output, n.thinking])).toEqual([
      ['the answer', 'weighing SECRET-REASONING options'],
      ['the answer', 'weighing SECRET-REASONING options'],
      ['the answer', 'weighing SECRET-REASONING options'],
    ]);
    // The next phases read the earlier answers only.
    const [, second, third] = promptsOf(model);
    expect(second!.used).toContain('the answer');
    expect(second!.used).not.toContain('SECRET-REASONING');
    expect(third!.used).not.toContain('SECRET-REASONING');
    expect((events.at(-1)!.data as { output: string }).output).toBe('the answer');
  });

  it('asks a thinking model not to think with LOCAL_LLM_THINK=off, and leaves it to the runtime with runtime', async () => {
    const model = addModel('quiet-thinker', { thinking: true });
    for (const [setting, sent] of [
      ['off', false],
      ['runtime', undefined],
    ] as const) {
      const server = await ctx.start({ LOCAL_LLM_THINK: setting });
      try {
        ctx.model.reply(['plain answer'], 0, ['hidden reasoning']);
        const before = ctx.model.requests.length;
        const events = await readEvents(
          await server.request('/graphs/summary/run', { method: 'POST', json: { message: 'No thinking', model } }),
        );
        expect(events.at(-1)!.data.type).toBe('run_done');
        const requests = ctx.model.requests.slice(before);
        expect(requests.map((r) => r.think)).toEqual([sent, sent, sent]);
        // Off: the stand-in, as the runtime, streams no reasoning; left to the runtime, it does, and it stays apart.
        expect(events.some((e) => e.data.type === 'thinking')).toBe(setting === 'runtime');
        expect((events.at(-1)!.data as { output: string }).output).toBe('plain answer');
      } finally {
        await server.close();
      }
    }
  });

  it('says when the runtime loads a model (a cold start), and lists the loaded models on /health', async () => {
    const model = addModel('sleepy-model', { loadDelayMs: 700 });
    const before = await (await fetch(`${ctx.server.url}/health`)).json();
    expect(before.local_runtime.loaded.map((m: { name: string }) => m.name)).not.toContain(model);

    ctx.model.reply(['awake']);
    const events = await run('Wake up', model);
    expect(events.at(-1)!.data.type).toBe('run_done');
    const types = events.map((e) => e.data.type);
    const loading = types.indexOf('model_loading');
    expect(loading).toBeGreaterThan(0);
    expect(events[loading]!.data).toMatchObject({ node: 'dispatch', model, expected_s: null });
    expect(loading).toBeLessThan(types.indexOf('token'));
    // Loaded once: the later phases do not wait for it.
    expect(types.filter((t) => t === 'model_loading')).toHaveLength(1);

    const after = await (await fetch(`${ctx.server.url}/health`)).json();
    expect(after.local_runtime.loaded).toContainEqual(expect.objectContaining({ name: model, context_length: 6100 }));
  });

  it('stores the token counts the runtime reported, per node, and carries them on node_exit', async () => {
    const model = addModel('counted-model');
    ctx.model.reply(numberedTokens(7, 'c'));
    const events = await run('Count me', model);
    const exits = events.filter((e) => e.data.type === 'node_exit').map((e) => e.data);
    const prompts = promptsOf(model);
    expect(exits).toEqual(
      ['dispatch', 'execute', 'summarize'].map((node, i) => ({
        type: 'node_exit',
        node,
        status: 'completed',
        queue_wait_ms: expect.any(Number) as unknown as number,
        prompt_tokens: prompts[i]!.used_tokens,
        output_tokens: 7,
      })),
    );
    const nodes = (await detail(runIdOf(events))).nodes;
    expect(nodes.map((n) => [n.node_id, n.prompt_tokens, n.output_tokens])).toEqual([
      ['dispatch', prompts[0]!.used_tokens, 7],
      ['execute', prompts[1]!.used_tokens, 7],
      ['summarize', prompts[2]!.used_tokens, 7],
    ]);
    // Later phases read the earlier outputs: their prompts are longer.
    expect(nodes[2]!.prompt_tokens!).toBeGreaterThan(nodes[0]!.prompt_tokens!);
    expect(nodes.every((n) => n.queue_wait_ms !== null && n.queue_wait_ms >= 0)).toBe(true);
  });

  it("says on /models when DEFAULT_MODEL is not among the runtime's models, and names the ones it has", async () => {
    const ok = await (await ctx.server.request('/models')).json();
    expect(ok.default_model).toEqual({ id: 'fake-model', available: true, message: null });
    const kept = [...ctx.model.models];
    ctx.model.models.splice(0, ctx.model.models.length, 'other-model', 'llama3.2');
    try {
      const missing = await (await ctx.server.request('/models')).json();
      expect(missing.default_model).toMatchObject({ id: 'fake-model', available: false });
      expect(missing.default_model.message).toContain('choose one of other-model, llama3.2');
    } finally {
      ctx.model.models.splice(0, ctx.model.models.length, ...kept);
    }
  });
});
