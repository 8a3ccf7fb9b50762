import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src-server/config';
import { llmQueueRepository } from '../../src-server/db/llm-queue.repository';
import { createPool, type Pool } from '../../src-server/db/pool';
import { initDb } from '../../src-server/db/migrate';
import { LocalQueue } from '../../src-server/models/local-queue';
import type {
  CallUsage,
  ChatMessage,
  ModelClient,
  ModelToolCall,
  ModelTurn,
  ToolSpec,
} from '../../src-server/models/model-client';
import { createModelProviders } from '../../src-server/models/model-providers';
import { toolTurnTokens, type ScriptedToolCall } from '../fixtures/fake-models';
import { useIntegrationServer } from '../helpers/integration';

/**
 * The model layer's tool calls through each provider's real client and wire format, against the stand-in: tools
 * offered in the provider's form, a streamed call read back with its arguments parsed, and the calls and their
 * answers sent back the way the provider accepts them (the stand-in refuses what the real APIs refuse).
 */
const ctx = useIntegrationServer({ server: false, catalog: false });

let pool: Pool;
let queue: LocalQueue;
let models: ModelClient;

beforeAll(async () => {
  pool = createPool(ctx.db.url);
  await initDb(pool);
  queue = new LocalQueue(llmQueueRepository(pool, 15), { slots: 2, timeoutS: 30, owner: 'tool-calls', leaseS: 20 });
  models = createModelProviders(
    loadConfig({
      LOCAL_LLM_BASE: ctx.model.url,
      CLOUD_A_API_KEY: 'gemini-test-key',
      CLOUD_A_BASE_URL: ctx.model.url,
      CLOUD_B_API_KEY: 'anthropic-test-key',
      CLOUD_B_BASE_URL: ctx.model.url,
      CLOUD_C_API_KEY: 'openai-test-key',
      CLOUD_C_BASE_URL: `${ctx.model.url}/v1`,
    }),
    queue,
  );
});
afterAll(async () => {
  queue?.close();
  await pool?.end();
});

const TOOLS: ToolSpec[] = [
  {
    name: 'project__read_file',
    description: 'Reads a file of the project.',
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string' },
        lines: { type: 'object', properties: { from: { type: 'integer' }, to: { type: 'integer' } } },
      },
      required: ['path'],
    },
  },
  {
    name: 'project__list_files',
    description: 'Lists the files of a folder of the project.',
    parameters: { type: 'object', properties: { folder: { type: 'string' } } },
  },
];

/** Two calls in one turn; the first one's arguments are long enough to stream in many pieces. */
const CALLS: ScriptedToolCall[] = [
  { name: 'project__read_file', arguments: { path: 'docs/getting started.md', lines: { from: 1, to: 40 } } },
  { name: 'project__list_files', arguments: { folder: 'src' } },
];

const RUN = '7d1f8f0e-3c1a-4b7e-9a55-2f1c9d0e6b21';
/**
 * The service's own call ids, as the tool loop makes them: `<run>:<node>:<visit>:<turn>:<place>`. With a node name of
 * this length they are over OpenAI's 64 characters, and all have colons, which Anthropic refuses.
 */
const ids = (turn: number, count: number) =>
  Array.from({ length: count }, (_, i) => `${RUN}:security_review_of_the_change:1:${turn}:${i}`);

const QUESTION: ChatMessage[] = [
  { role: 'system', content: 'You review code. Use the tools to read the project.' },
  { role: 'user', content: 'What does the getting-started guide say?' },
];

/** A model turn as the tool loop records it, followed by one answer per call. */
function answered(turn: ModelTurn, callIds: string[], answers: string[]): ChatMessage[] {
  const calls: ModelToolCall[] = turn.tool_calls.map((call, i) => ({ id: callIds[i]!, ...call }));
  return [
    { role: 'assistant', content: turn.text, tool_calls: calls },
    ...calls.map((call, i): ChatMessage => ({
      role: 'tool',
      content: answers[i]!,
      tool_call: { id: call.id, name: call.name },
    })),
  ];
}

/** One model call offered TOOLS; what it returned, streamed and counted, and the body the stand-in received. */
async function call(model: string, messages: ChatMessage[]) {
  const tokens: string[] = [];
  const usage: CallUsage[] = [];
  const before = ctx.model.recorded.length;
  const turn = await models.stream({
    model,
    label: 'tool calls test',
    tenant: 'test',
    messages,
    tools: TOOLS,
    signal: AbortSignal.timeout(20_000),
    onToken: (text) => tokens.push(text),
    onQueued: () => undefined,
    onTrimmed: () => undefined,
    onUsage: (u) => usage.push(u),
  });
  const requests = ctx.model.recorded.slice(before);
  expect(requests).toHaveLength(1);
  return { turn, tokens, usage, body: requests[0]!.body };
}

/** The parts of each API's request body the tests read. */
interface GeminiBody {
  tools: { functionDeclarations: { name: string }[] }[];
  contents: { role: string; parts: object[] }[];
}
interface AnthropicBody {
  tools: { name: string }[];
  messages: { role: string; content: { id?: string }[] }[];
}
interface OpenAIBody {
  tools: { type: string; name: string }[];
  input: { type: string; role?: string; call_id?: string }[];
}
interface OllamaBody {
  tools: unknown[];
  messages: unknown[];
}

const ANSWERS = ['# Getting started\nRun npm ci, then npm start.', 'src/main.ts\nsrc/config.ts'];

/** What each provider's API expects: the tools it is offered, and the calls and answers it is sent back. */
const PROVIDERS = [
  {
    name: 'cloud_a (Gemini)',
    model: 'cloud_a:gemini-test',
    // What the answer says of itself, in the provider's own words (Gemini's stream names no model).
    ending: { response_model: null, finish_reason: 'STOP' },
    offered: (body: Record<string, unknown>) =>
      (body as unknown as GeminiBody).tools.flatMap((t) => t.functionDeclarations.map((d) => d.name)),
    /** The model's turn, then one content holding every answer, matched to its call by name. */
    sentBack(body: Record<string, unknown>): string[] {
      const [question, turn, answers, ...rest] = (body as unknown as GeminiBody).contents;
      expect(question!.role).toBe('user');
      expect(rest).toEqual([]);
      expect(turn).toEqual({
        role: 'model',
        parts: CALLS.map((c) => ({ functionCall: { name: c.name, args: c.arguments } })),
      });
      expect(answers).toEqual({
        role: 'user',
        parts: CALLS.map((c, i) => ({ functionResponse: { name: c.name, response: { result: ANSWERS[i] } } })),
      });
      return [];
    },
  },
  {
    name: 'cloud_b (Anthropic)',
    model: 'cloud_b:claude-test',
    ending: { response_model: 'claude-test', finish_reason: 'tool_use' },
    offered: (body: Record<string, unknown>) => (body as unknown as AnthropicBody).tools.map((t) => t.name),
    /** tool_use blocks with the calls' ids, then tool_result blocks naming them; the ids it was sent. */
    sentBack(body: Record<string, unknown>): string[] {
      const [question, turn, answers, ...rest] = (body as unknown as AnthropicBody).messages;
      expect(question!.role).toBe('user');
      expect(rest).toEqual([]);
      expect(turn!.role).toBe('assistant');
      expect(turn!.content).toEqual(
        CALLS.map((c) => ({ type: 'tool_use', id: expect.any(String), name: c.name, input: c.arguments })),
      );
      const sent = turn!.content.map((block) => block.id!);
      expect(answers).toEqual({
        role: 'user',
        content: ANSWERS.map((text, i) => ({ type: 'tool_result', tool_use_id: sent[i], content: text })),
      });
      return sent;
    },
  },
  {
    name: 'cloud_c (OpenAI Responses)',
    model: 'cloud_c:gpt-test',
    ending: { response_model: 'gpt-test', finish_reason: 'completed' },
    offered: (body: Record<string, unknown>) =>
      (body as unknown as OpenAIBody).tools.map((t) => (t.type === 'function' ? t.name : `(${t.type})`)),
    /** function_call items with the calls' call_ids, then function_call_output items naming them. */
    sentBack(body: Record<string, unknown>): string[] {
      const [system, question, ...items] = (body as unknown as OpenAIBody).input;
      expect([system!.role, question!.role]).toEqual(['system', 'user']);
      // The turn had no text: no assistant message, only its calls.
      expect(items).toEqual([
        ...CALLS.map((c) => ({
          type: 'function_call',
          name: c.name,
          arguments: JSON.stringify(c.arguments),
          call_id: expect.any(String),
        })),
        ...ANSWERS.map((text) => ({ type: 'function_call_output', call_id: expect.any(String), output: text })),
      ]);
      const sent = items.slice(0, CALLS.length).map((item) => item.call_id!);
      expect(items.slice(CALLS.length).map((item) => item.call_id)).toEqual(sent);
      return sent;
    },
  },
];

describe.each(PROVIDERS)('tool calls through $name', (provider) => {
  it('offers the tools, reads the streamed calls with their arguments parsed, and counts the usage', async () => {
    ctx.model.toolTurns = [CALLS];
    const { turn, tokens, usage, body } = await call(provider.model, QUESTION);
    expect(provider.offered(body)).toEqual(TOOLS.map((t) => t.name));
    expect(turn).toEqual({ text: '', tool_calls: CALLS });
    expect(tokens).toEqual([]);
    const reported = ctx.model.reported.at(-1)!;
    expect(reported.input_tokens).toBeGreaterThan(10);
    expect(usage).toEqual([
      {
        model: provider.model,
        queue_wait_ms: null,
        prompt_tokens: reported.input_tokens,
        output_tokens: toolTurnTokens(CALLS),
        duration_ms: expect.any(Number),
        load_ms: null,
        generation_ms: null,
        ...provider.ending,
      },
    ]);
  });

  it('sends the calls and their answers back as the provider expects, and gets the answer text', async () => {
    ctx.model.toolTurns = [CALLS];
    const first = await call(provider.model, QUESTION);
    ctx.model.reply(['The guide', ' says: run npm ci.']);
    const conversation = [...QUESTION, ...answered(first.turn, ids(0, 2), ANSWERS)];
    const second = await call(provider.model, conversation);
    expect(second.turn).toEqual({ text: 'The guide says: run npm ci.', tool_calls: [] });
    expect(second.tokens).toEqual(['The guide', ' says: run npm ci.']);
    const sent = provider.sentBack(second.body);
    // Ids the provider accepts (Anthropic: ^[a-zA-Z0-9_-]+$; OpenAI: at most 64 characters), one per call.
    for (const id of sent) expect(id).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    expect(new Set(sent).size).toBe(sent.length);

    // A later turn sends the same calls under the same ids.
    ctx.model.toolTurns = [[CALLS[1]!]];
    const again = await call(provider.model, conversation);
    ctx.model.reply(['done']);
    const third = await call(provider.model, [...conversation, ...answered(again.turn, ids(1, 1), ['src/main.ts'])]);
    expect(third.turn.text).toBe('done');
    const everySent = JSON.stringify(third.body);
    for (const id of sent) expect(everySent).toContain(JSON.stringify(id));
    expect(everySent).not.toContain(RUN);
  });
});

describe('tool call arguments that are not a JSON object', () => {
  it.each([
    ['cloud_b (Anthropic)', 'cloud_b:claude-test', 'cloud_b'],
    ['cloud_c (OpenAI Responses)', 'cloud_c:gpt-test', 'cloud_c'],
  ])('%s: the call fails naming the provider and the tool', async (_name, model, provider) => {
    ctx.model.toolTurns = [[{ name: 'project__read_file', arguments: {}, raw_arguments: '{"path": "README.md"' }]];
    await expect(call(model, QUESTION)).rejects.toThrow(
      `${provider} called the tool "project__read_file" with arguments that are not a JSON object: {"path": "README.md"`,
    );
  });
});

describe('tool calls through the local runtime (Ollama)', () => {
  it('offers the tools, reads the calls, and sends them and their answers back by the tool name', async () => {
    ctx.model.toolTurns = [CALLS];
    const first = await call('fake-model', QUESTION);
    expect((first.body as unknown as OllamaBody).tools).toEqual(TOOLS.map((t) => ({ type: 'function', function: t })));
    expect(first.turn).toEqual({ text: '', tool_calls: CALLS });
    expect(first.usage).toEqual([
      {
        model: 'fake-model',
        queue_wait_ms: expect.any(Number),
        prompt_tokens: ctx.model.prompts.at(-1)!.used_tokens,
        output_tokens: 1,
        duration_ms: expect.any(Number),
        load_ms: 0.002 * 1000,
        generation_ms: expect.any(Number),
        response_model: 'fake-model',
        finish_reason: 'stop',
      },
    ]);

    ctx.model.reply(['The guide', ' says: run npm ci.']);
    const second = await call('fake-model', [...QUESTION, ...answered(first.turn, ids(0, 2), ANSWERS)]);
    expect(second.turn).toEqual({ text: 'The guide says: run npm ci.', tool_calls: [] });
    // Ollama's calls carry no ids: an answer names its tool.
    expect((second.body as unknown as OllamaBody).messages.slice(2)).toEqual([
      {
        role: 'assistant',
        content: '',
        tool_calls: CALLS.map((c) => ({ function: { name: c.name, arguments: c.arguments } })),
      },
      ...ANSWERS.map((text, i) => ({ role: 'tool', content: text, tool_name: CALLS[i]!.name })),
    ]);
  });

  it('a model whose /api/show lists no tools capability fails with ToolsUnsupportedError naming it', async () => {
    ctx.model.models.push('plain-model');
    ctx.model.toolessModels.push('plain-model');
    const before = ctx.model.recorded.length;
    const failed = await call('plain-model', QUESTION).catch((error: unknown) => error);
    expect(failed).toMatchObject({
      name: 'ToolsUnsupportedError',
      message: expect.stringContaining('the local model "plain-model" does not support tools'),
    });
    // Refused before any chat call: the runtime is not asked.
    expect(ctx.model.recorded.slice(before)).toEqual([]);
  });
});
