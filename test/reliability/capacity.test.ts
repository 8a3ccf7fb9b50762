import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedDatabase, type EmbeddedDatabase } from '../../src-server/db/embedded';
import { writeFixtureCatalog } from '../helpers/fixture-assets';
import { createTestDatabase, type TestDatabase } from '../helpers/database';
import { freePort } from '../helpers/ports';
import { streamProblems } from '../helpers/sse';
import { startNginx, type Nginx } from '../helpers/nginx';
import { compiledLaunch, spawnServer, type ServerProcess } from '../helpers/process';
import { serviceCapacity, startModelProcess, storedStream, type ModelProcess, type RunOutcome } from '../load/capacity';

/**
 * No run fails for the server's own resources when the limits a user set allow it to run: hundreds of runs at once,
 * at a real model's pace (40 tokens a second, three phases of 200 tokens), on one process and on three behind nginx,
 * and through a PostgreSQL restart. The local runtime's queue and the per-user limit are lifted, so that neither is
 * what holds runs back. Some readers are cut mid-stream and re-attach on another process: they get the same events
 * under the same ids as the stored stream.
 */
const RUNS = [500, 1000];
const TOKENS = 200;
const TOKEN_DELAY_MS = 25;

let model: ModelProcess;
let generatedDir: string;

const env = (extra: Record<string, string>) => ({
  LOCAL_LLM_BASE: model.url,
  DEFAULT_MODEL: 'fake-model',
  GENERATED_DIR: generatedDir,
  LOCAL_LLM_MAX_CONCURRENT: '1024',
  LOCAL_LLM_MAX_RUNS_PER_USER: '5000',
  ...extra,
});

beforeAll(async () => {
  model = await startModelProcess();
  await model.script(TOKENS, TOKEN_DELAY_MS);
  generatedDir = await writeFixtureCatalog();
});

afterAll(async () => {
  await model?.stop();
  if (generatedDir) await fs.rm(generatedDir, { recursive: true, force: true });
});

/** What a run that did not complete shows: a run that failed, or a stream that stopped short of the run's end. */
async function describeFailure(o: RunOutcome, readFrom: string): Promise<string> {
  const status = o.runId
    ? await fetch(`${readFrom}/runs/${o.runId}`).then(
        async (res) => ((await res.json()) as { status?: string }).status ?? `answered ${res.status}`,
        (error: Error) => `unread (${error.message})`,
      )
    : 'never started';
  const last = o.data.at(-1);
  const lastType = last ? ((JSON.parse(last) as { type?: string }).type ?? '?') : 'none';
  return (
    `${o.end || 'no end'}${o.errorDetail ? `: ${o.errorDetail}` : ''} (run ${o.runId || '-'} ${status}; ` +
    `${o.cut ? 'cut and re-attached' : 'one connection'}; ${o.ids.length} events, the last ${lastType} ${o.ids.at(-1)})`
  );
}

/** What the processes warned of: shown beside the failures. */
function warnings(servers: ServerProcess[]): string {
  return servers
    .map((s, i) => {
      const lines = s
        .output()
        .split('\n')
        .filter((line) => / (WARNING|ERROR) /.test(line));
      return `process ${i + 1}: ${lines.length} warnings\n${lines.slice(0, 20).join('\n')}`;
    })
    .join('\n');
}

/**
 * Every run completed, and every cut reader got what the store holds, under the same ids (and, of a run taken over
 * from a process too busy to renew its lease, perhaps what that process sent live before it knew: helpers/sse.ts).
 */
async function expectNoneLost(outcomes: RunOutcome[], readFrom: string, servers: ServerProcess[]): Promise<void> {
  const failed = outcomes.filter((o) => o.end !== 'run_done');
  const described = await Promise.all(failed.map((o) => describeFailure(o, readFrom)));
  expect(described, failed.length ? warnings(servers) : undefined).toEqual([]);
  for (const cut of outcomes.filter((o) => o.cut)) {
    const stored = await storedStream(readFrom, cut.runId);
    expect({ run: cut.runId, problems: streamProblems(cut, stored) }).toEqual({ run: cut.runId, problems: [] });
  }
}

describe('hundreds of runs at once at 40 tokens a second', () => {
  // 1,000 on one process is past what it streams at the model's pace: the runs are slower, and none may fail for it
  // (they did, when waiting for a busy pool counted as the database being away).
  it.each(RUNS)(
    '%i runs: none fails on one process',
    async (runs) => {
      const db = await createTestDatabase();
      const server = await spawnServer(env({ DATABASE_URL: db.url }), 60_000, [], compiledLaunch());
      try {
        const outcomes = await serviceCapacity({ urls: [server.url], runs, cutEvery: 25, cutAfterTokens: 100 });
        await expectNoneLost(outcomes, server.url, [server]);
      } finally {
        await server.stop();
        await db.drop();
      }
    },
    300_000,
  );

  describe('three processes behind nginx', () => {
    let db: TestDatabase;
    let servers: ServerProcess[] = [];
    let nginx: Nginx | undefined;

    beforeAll(async () => {
      db = await createTestDatabase();
      servers = await Promise.all(
        [1, 2, 3].map(() => spawnServer(env({ DATABASE_URL: db.url }), 60_000, [], compiledLaunch())),
      );
      nginx = await startNginx(servers.map((s) => s.url));
    });

    afterAll(async () => {
      await nginx?.stop();
      await Promise.all(servers.map((s) => s.stop()));
      await db?.drop();
    });

    it.each(RUNS)(
      '%i runs: none fails, and readers cut mid-stream re-attach through another process',
      async (runs) => {
        const outcomes = await serviceCapacity({ urls: [nginx!.url], runs, cutEvery: 25, cutAfterTokens: 100 });
        await expectNoneLost(outcomes, nginx!.url, servers);
      },
      300_000,
    );
  });

  describe('with a PostgreSQL restart in the middle', () => {
    let database: EmbeddedDatabase;
    let server: ServerProcess;
    let dataDir: string;
    let port: number;

    beforeAll(async () => {
      dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-load-pg-'));
      await fs.chmod(dataDir, 0o755);
      port = await freePort();
      database = await startEmbeddedDatabase(dataDir, port);
      server = await spawnServer(env({ DATABASE_URL: database.url }), 60_000, [], compiledLaunch());
    });

    afterAll(async () => {
      await server?.stop();
      await database?.stop();
      if (dataDir) await fs.rm(dataDir, { recursive: true, force: true });
    });

    it('runs wait for it and continue; none is lost', async () => {
      // A start while the database is away answers 503 (nothing was stored): every run has begun before the restart.
      let started = 0;
      let allStarted!: () => void;
      const begun = new Promise<void>((resolve) => (allStarted = resolve));
      const load = serviceCapacity({
        urls: [server.url],
        runs: 200,
        onStarted: () => ++started === 200 && allStarted(),
      });
      await begun;
      // Mid-phase for most runs: they are streaming and writing.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      await database.stop();
      await new Promise((resolve) => setTimeout(resolve, 2000));
      database = await startEmbeddedDatabase(dataDir, port);
      const outcomes = await load;
      const failed = outcomes.filter((o) => o.end !== 'run_done');
      expect(await Promise.all(failed.map((o) => describeFailure(o, server.url)))).toEqual([]);
      // The restart reached the runs: their writes failed while it lasted, and were tried again.
      expect(server.output()).toMatch(/WARNING svc\.engine .* failed, trying again/);
    }, 240_000);
  });
});
