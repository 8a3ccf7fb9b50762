/**
 * The local-runtime checks of the test suite, against a real Ollama instead of the stand-in: for a person who has
 * one. Not run by CI. `npm run check:ollama` (LOCAL_LLM_BASE, default http://127.0.0.1:11434); CHECK_MODEL picks the
 * model (default: the runtime's first), CHECK_THINKING_MODEL a thinking model (default: the first whose /api/show
 * lists the `thinking` capability; the check is skipped without one), CHECK_PULL_MODEL a model to pull (skipped without
 * one, as it downloads). The checks go through the service's own
 * model layer (the context window, the warnings, the counts, reasoning, cold starts), with no queue in front.
 * Each prints PASS, FAIL or SKIP; the exit code is 1 when one failed.
 */
import { loadConfig, type Config } from '../../src-server/config';
import type { NodeWarning } from '../../src-server/contracts/runs';
import type { PullProgress } from '../../src-server/contracts/models';
import {
  forgetLoaded,
  fullModelName,
  loadedModels,
  modelInfo,
  modelWindow,
} from '../../src-server/models/local-runtime';
import { pullModel, runtimeModels } from '../../src-server/models/runtime-models';
import type { CallUsage, ChatMessage, LoadingInfo, TrimReport } from '../../src-server/models/model-client';
import { createModelProviders } from '../../src-server/models/model-providers';
import { runtimeAddress } from '../../src-server/models/runtime-address';

const base = process.env.LOCAL_LLM_BASE ?? 'http://127.0.0.1:11434';
const noQueue = { acquire: async () => async () => undefined };
let failed = 0;

function report(outcome: 'PASS' | 'FAIL' | 'SKIP', name: string, detail: string): void {
  if (outcome === 'FAIL') failed++;
  console.log(`${outcome}  ${name}: ${detail}`);
}

interface CallResult {
  text: string;
  thinking: string;
  usage: CallUsage | null;
  warnings: NodeWarning[];
  loading: LoadingInfo | null;
  trimmed: TrimReport | null;
  firstPieceMs: number | null;
}

/** One call through the service's model layer, with `settings` on top of the environment's configuration. */
async function call(
  model: string,
  messages: ChatMessage[],
  settings: Record<string, string> = {},
): Promise<CallResult> {
  const config: Config = loadConfig({ ...process.env, LOCAL_LLM_BASE: base, ...settings });
  const models = createModelProviders(config, noQueue);
  const result: CallResult = {
    text: '',
    thinking: '',
    usage: null,
    warnings: [],
    loading: null,
    trimmed: null,
    firstPieceMs: null,
  };
  const started = performance.now();
  const first = () => (result.firstPieceMs ??= Math.round(performance.now() - started));
  ({ text: result.text } = await models.stream({
    model,
    label: 'check-ollama',
    tenant: '',
    messages,
    signal: AbortSignal.timeout(600_000),
    onToken: first,
    onQueued: () => undefined,
    onTrimmed: (trimmed) => (result.trimmed = trimmed),
    onThinking: (text) => {
      first();
      result.thinking += text;
    },
    onLoading: (info) => (result.loading = info),
    onWarning: (warning) => result.warnings.push(warning),
    onUsage: (usage) => (result.usage = usage),
  }));
  return result;
}

async function tags(): Promise<string[]> {
  const address = runtimeAddress(base);
  const res = await fetch(new URL('/api/tags', address.url), { headers: address.headers });
  if (!res.ok) throw new Error(`/api/tags answered ${res.status}`);
  return ((await res.json()) as { models: { name: string }[] }).models.map((m) => m.name);
}

/** Asks the runtime to unload `model` now (keep_alive 0), so that the next call starts cold. */
async function unload(model: string): Promise<void> {
  const address = runtimeAddress(base);
  await fetch(new URL('/api/generate', address.url), {
    method: 'POST',
    headers: { ...address.headers, 'content-type': 'application/json' },
    body: JSON.stringify({ model, keep_alive: 0 }),
  });
  forgetLoaded(base, model);
  for (let i = 0; i < 50; i++) {
    if (!(await loadedModels(base)).some((m) => m.name === model || m.name === `${model}:latest`)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
}

const user = (content: string): ChatMessage => ({ role: 'user', content });
const system: ChatMessage = { role: 'system', content: 'You are a careful assistant. Answer briefly.' };

async function main(): Promise<void> {
  let available: string[];
  try {
    available = await tags();
  } catch (error) {
    console.error(`cannot reach the runtime at ${runtimeAddress(base).url}: ${(error as Error).message}`);
    process.exit(2);
  }
  const model = process.env.CHECK_MODEL ?? available[0];
  if (!model) {
    console.error('the runtime has no model: pull one (e.g. ollama pull llama3.2), or set CHECK_MODEL');
    process.exit(2);
  }
  console.log(`runtime ${runtimeAddress(base).url}, model ${model}`);

  const info = await modelInfo(base, model);
  if (info?.context_length) report('PASS', '/api/show', `${model} holds ${info.context_length} tokens`);
  else report('FAIL', '/api/show', `no context length for ${model}`);

  // 1. About 5,000 tokens by the service's estimate: more than Ollama's default window of 4,096 on small GPUs.
  const sentence = 'Each module of the project reads its settings once, keeps them, and reports what it changed. ';
  const long = `The first line of the request is this one. ${sentence.repeat(210)}What did the first line say?`;
  const whole = await call(model, [system, user(long)]);
  const window = await modelWindow(loadConfig({ ...process.env, LOCAL_LLM_BASE: base }), model);
  const counted = whole.usage?.prompt_tokens ?? null;
  if (counted === null) report('FAIL', 'long prompt', 'the runtime reported no prompt_eval_count');
  else if (whole.warnings.some((w) => w.code === 'prompt_cut'))
    report('FAIL', 'long prompt', `cut by the runtime anyway (${counted} tokens in a window of ${window.num_ctx})`);
  else
    report(
      counted > 4096 ? 'PASS' : 'SKIP',
      'long prompt',
      `${counted} prompt tokens read whole in a window of ${window.num_ctx}` +
        (counted > 4096 ? '' : ' (this tokenizer needs fewer than 4,096: the default window would have held it)'),
    );

  // 2. Token counts from the runtime.
  if (whole.usage?.output_tokens && whole.usage.prompt_tokens)
    report('PASS', 'token counts', `prompt ${whole.usage.prompt_tokens}, answer ${whole.usage.output_tokens}`);
  else report('FAIL', 'token counts', `got ${JSON.stringify(whole.usage)}`);

  // 3. A model that holds less than the budget: the budget is lowered and the window stays within the model.
  if (info?.context_length) {
    const settings = { LOCAL_LLM_MAX_CONTEXT_TOKENS: String(info.context_length + 1000) };
    const lowered = await modelWindow(loadConfig({ ...process.env, LOCAL_LLM_BASE: base, ...settings }), model);
    const small = await call(model, [system, user('Say hello.')], settings);
    const ps = (await loadedModels(base)).find((m) => m.name === model || m.name === `${model}:latest`);
    const within = lowered.lowered && lowered.num_ctx <= info.context_length;
    const loadedWith = ps?.context_length ?? null;
    report(
      within && (loadedWith === null || loadedWith <= info.context_length) && small.text ? 'PASS' : 'FAIL',
      'lowered budget',
      `budget ${lowered.budget}, num_ctx ${lowered.num_ctx} (model ${info.context_length}); ` +
        `the runtime loaded it with ${loadedWith ?? 'an unreported'} window`,
    );
  } else report('SKIP', 'lowered budget', 'the model has no known context length');

  // 4. An answer stopped at its limit.
  const cut = await call(model, [system, user('Write a long essay about rivers, at least 500 words.')], {
    LOCAL_LLM_MAX_ANSWER_TOKENS: '64',
  });
  const answerCut = cut.warnings.find((w) => w.code === 'answer_cut');
  report(
    answerCut && cut.usage?.output_tokens === 64 ? 'PASS' : 'FAIL',
    'answer cut at length',
    answerCut ? answerCut.message : `no warning (answer tokens ${cut.usage?.output_tokens})`,
  );

  // 5. Reasoning apart from the answer.
  let thinker = process.env.CHECK_THINKING_MODEL;
  for (const name of thinker ? [] : available) {
    if ((await modelInfo(base, name))?.thinking) {
      thinker = name;
      break;
    }
  }
  if (!thinker) report('SKIP', 'thinking', 'no thinking model in the runtime (e.g. ollama pull qwen3:0.6b)');
  else {
    const thought = await call(thinker, [system, user('Is 17 a prime number? Answer yes or no.')]);
    report(
      thought.thinking.trim() && thought.text.trim() && !thought.text.includes(thought.thinking.trim().slice(0, 40))
        ? 'PASS'
        : 'FAIL',
      'thinking',
      `${thinker}: ${thought.thinking.length} characters of reasoning apart, answer "${thought.text.trim().slice(0, 60)}"`,
    );
  }

  // 6. A cold start: the model unloaded, the next call says it waits for a load.
  await unload(model);
  const cold = await call(model, [system, user('Say hello.')]);
  report(
    cold.loading ? 'PASS' : 'FAIL',
    'cold start',
    cold.loading
      ? `model_loading before the call; first piece after ${cold.firstPieceMs} ms`
      : 'no model_loading for a model that was unloaded',
  );
  const warm = await call(model, [system, user('Say hello again.')]);
  report(warm.loading ? 'FAIL' : 'PASS', 'warm call', warm.loading ? 'model_loading for a loaded model' : 'no load');

  // 7. The Models view's list and pull, through the same calls the service makes (models/runtime-models.ts).
  const listed = await runtimeModels(base);
  const described = listed.find((m) => m.name === fullModelName(model) || m.name === model);
  report(
    described?.size && described.family ? 'PASS' : 'FAIL',
    'model list',
    described
      ? `${described.name}: ${described.size} bytes, ${described.family} ${described.parameter_size ?? ''} ${described.quantization ?? ''}`
      : `${model} is not in /api/tags`,
  );
  const pullName = process.env.CHECK_PULL_MODEL;
  if (!pullName)
    report('SKIP', 'pull', 'set CHECK_PULL_MODEL to a small model to pull (e.g. all-minilm), as it downloads');
  else {
    const seen: PullProgress[] = [];
    try {
      await pullModel(base, pullName, AbortSignal.timeout(1_800_000), (progress) => seen.push(progress));
      const bytes = seen.filter((p) => p.total > 0);
      const grows = bytes.every(
        (p, i) => i === 0 || p.completed >= bytes[i - 1]!.completed || p.total > bytes[i - 1]!.total,
      );
      const now = (await runtimeModels(base)).some((m) => m.name === fullModelName(pullName) || m.name === pullName);
      report(
        seen.at(-1)?.status === 'success' && grows && now ? 'PASS' : 'FAIL',
        'pull',
        `${seen.length} progress lines, ${bytes.at(-1)?.completed ?? 0} of ${bytes.at(-1)?.total ?? 0} bytes, listed after: ${now}`,
      );
    } catch (error) {
      report('FAIL', 'pull', (error as Error).message);
    }
  }

  console.log(failed ? `${failed} check(s) failed` : 'all checks passed');
  process.exit(failed ? 1 : 0);
}

await main();
