/**
 * The studio following a run at the stand-in's full speed, measured in Chromium: does the page stay responsive
 * while thousands of tokens arrive? `npm run bench` calls studioFollowBench(); `npx tsx test/bench/studio-follow.ts`
 * runs this part alone (after `node build/build.mjs`), on its own database, stand-in and server.
 */
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import type { ModelFake } from '../fixtures/fake-models';
import { launchChromium } from '../helpers/browser';
import { ms, type BenchRow } from './bench-table';

export interface StudioFollowResult {
  tokens: number;
  /** From the first token on screen to the run shown complete (ms). */
  streamMs: number;
  /** Animation frames the page rendered meanwhile, and their rate. */
  frames: number;
  fps: number;
  /** Times the transcript's DOM changed: with tokens handed over once a frame, far fewer than the tokens. */
  transcriptUpdates: number;
  /** How late a 20 ms timer fired while the stream ran (p95, max): what a click or a key would wait. */
  lagP95Ms: number;
  lagMaxMs: number;
  /** The longest task that blocked the main thread (ms), 0 when none passed 50 ms. */
  longestTaskMs: number;
  /** From the last token event the page received to that token shown on screen (ms). */
  lastTokenToScreenMs: number;
}

/** What the page measures while the run streams; read back once it is complete. */
interface PageProbe {
  frames: number;
  firstText: number;
  done: number;
  updates: number;
  lags: number[];
  longest: number;
  lastTokenAt: number;
  lastTokenShownAt: number;
}

/**
 * The probes as the page runs them: frames, transcript changes, timer lateness, long tasks, and when each phase's
 * last token arrives and shows. Plain JavaScript text, so no helper of this file's compiler is needed in the page.
 */
const PROBES = String.raw`
(last) => {
  const probe = { frames: 0, firstText: 0, done: 0, updates: 0, lags: [], longest: 0, lastTokenAt: 0, lastTokenShownAt: 0 };
  window.__probe = probe;
  const streaming = () => probe.firstText > 0 && probe.done === 0;
  const frame = () => {
    if (streaming()) probe.frames++;
    requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
  const tick = () => {
    const planned = performance.now() + 20;
    setTimeout(() => {
      if (streaming()) probe.lags.push(performance.now() - planned);
      tick();
    }, 20);
  };
  tick();
  try {
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) if (streaming()) probe.longest = Math.max(probe.longest, entry.duration);
    }).observe({ type: 'longtask' });
  } catch {}
  // When the page reads each phase's last token from the network: the stream's text leaves its TextDecoderStream.
  const arrived = [];
  const shown = [];
  const marker = '"text":' + JSON.stringify(last);
  const Stream = window.TextDecoderStream;
  window.TextDecoderStream = class extends Stream {
    constructor(...args) {
      super(...args);
      const readable = super.readable;
      const watch = new TransformStream({
        transform(chunk, controller) {
          if (chunk.includes(marker)) arrived.push(performance.now());
          controller.enqueue(chunk);
        },
      });
      Object.defineProperty(this, 'readable', { value: readable.pipeThrough(watch) });
    }
  };
  const needle = last.trim();
  new MutationObserver(() => {
    const transcript = document.querySelector('[data-testid="transcript"]');
    if (!transcript) return;
    if (!probe.firstText && transcript.querySelector('[data-format]')) probe.firstText = performance.now();
    if (streaming()) probe.updates++;
    // Each phase ends with the same token: the n-th time it is on screen answers its n-th arrival.
    const onScreen = (transcript.textContent || '').split(needle).length - 1;
    while (shown.length < onScreen) shown.push(performance.now());
    if (shown.length > 0 && shown.length === arrived.length) {
      probe.lastTokenAt = arrived[arrived.length - 1];
      probe.lastTokenShownAt = shown[shown.length - 1];
    }
    const status = document.querySelector('[data-testid="run-status"]');
    if (!probe.done && status && (status.textContent || '').includes('Run complete')) probe.done = performance.now();
  }).observe(document, { subtree: true, childList: true, characterData: true });
}`;

/** Installs the probes before the studio's own scripts run. */
async function installProbes(page: Page, lastToken: string): Promise<void> {
  await page.addInitScript({ content: `(${PROBES})(${JSON.stringify(lastToken)});` });
}

/**
 * Tokens per phase: enough for a stream of a few seconds at the stand-in's full speed, so that frames per second are
 * counted over many frames. The server must allow answers this long (LOCAL_LLM_MAX_ANSWER_TOKENS).
 */
export const STUDIO_TOKENS_PER_PHASE = 20_000;

/**
 * Opens the studio of `baseUrl` in Chromium, starts a run of `agent` from its form while the stand-in answers each
 * phase with `tokensPerPhase` tokens as fast as it can, and measures the page until the run shows complete.
 */
export async function studioFollowBench(
  baseUrl: string,
  model: ModelFake,
  { agent = 'summary', tokensPerPhase = STUDIO_TOKENS_PER_PHASE, phases = 3 } = {},
): Promise<StudioFollowResult> {
  const tokens = Array.from({ length: tokensPerPhase }, (_, i) => `t${i} `);
  // Each phase ends with a token told apart from the others: when it is seen arriving, and when on screen. (A phase
  // answers at most LOCAL_LLM_MAX_ANSWER_TOKENS: the token after would never come.)
  const lastToken = `end${tokensPerPhase - 1} `;
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await installProbes(page, lastToken);
    await page.goto(`${baseUrl}/ui`);
    await page.getByTestId(`asset-${agent}`).click();
    await page.getByTestId('run-message').fill('Follow me at full speed');
    model.reply([...tokens.slice(0, -1), lastToken]);
    await page.getByTestId('run-submit').click();
    await page.getByTestId('run-status').getByText('Run complete').waitFor({ timeout: 120_000 });
    await page.waitForFunction((count) => {
      const probe = (window as unknown as { __probe: PageProbe }).__probe;
      const text = document.querySelector('[data-testid="transcript"]')?.textContent ?? '';
      return probe.lastTokenShownAt > 0 && text.split('end').length - 1 >= count;
    }, phases);
    const probe = await page.evaluate(() => (window as unknown as { __probe: PageProbe }).__probe);
    const lags = [...probe.lags].sort((a, b) => a - b);
    const streamMs = probe.done - probe.firstText;
    return {
      tokens: tokensPerPhase * phases,
      streamMs,
      frames: probe.frames,
      fps: probe.frames / (streamMs / 1000),
      transcriptUpdates: probe.updates,
      lagP95Ms: lags[Math.min(lags.length - 1, Math.ceil(lags.length * 0.95) - 1)] ?? 0,
      lagMaxMs: lags.at(-1) ?? 0,
      longestTaskMs: probe.longest,
      lastTokenToScreenMs: probe.lastTokenAt ? probe.lastTokenShownAt - probe.lastTokenAt : Number.NaN,
    };
  } finally {
    await browser.close();
  }
}

/** The bench table's row for a result. */
export function studioFollowRow(r: StudioFollowResult): BenchRow {
  return {
    benchmark: `Studio following a run at full stand-in speed in Chromium (${r.tokens.toLocaleString('en')} tokens, 3 phases)`,
    service: `${r.fps.toFixed(0)} frames/s over ${(r.streamMs / 1000).toFixed(1)} s; ${r.transcriptUpdates} transcript updates; timer lag p95 ${ms(r.lagP95Ms)} (max ${ms(r.lagMaxMs)}); longest task ${ms(r.longestTaskMs)}; last token on screen ${ms(r.lastTokenToScreenMs)} after it arrived`,
    baseline: `${r.tokens.toLocaleString('en')} token events`,
    ratio: `${(r.tokens / Math.max(1, r.transcriptUpdates)).toFixed(0)} tokens per update`,
    target: '≥ 30 frames/s, last token on screen < 100 ms',
    met: r.fps >= 30 && r.lastTokenToScreenMs < 100 ? 'yes' : 'no',
  };
}

/** This part alone: its own database, stand-in and compiled server, as the bench sets them up. */
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { startIntegrationFixture } = await import('../helpers/integration');
  const { spawnServer, compiledLaunch } = await import('../helpers/process');
  const { createDatabase, startDatabaseServer } = await import('../helpers/postgres');
  const database = await startDatabaseServer();
  const db = await createDatabase(database.url, 'svc_bench');
  const fixture = await startIntegrationFixture({ server: false, database: false });
  const env = fixture.env({
    DATABASE_URL: db.url,
    LOCAL_LLM_MAX_CONCURRENT: '64',
    LOCAL_LLM_MAX_ANSWER_TOKENS: String(STUDIO_TOKENS_PER_PHASE),
  });
  const server = await spawnServer(env, 60_000, [], compiledLaunch());
  try {
    const result = await studioFollowBench(server.url, fixture.model);
    const row = studioFollowRow(result);
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n| ${Object.values(row).join(' | ')} |\n`);
  } finally {
    await server.stop();
    await fixture.close();
    await db.drop();
    await database.stop();
  }
}
