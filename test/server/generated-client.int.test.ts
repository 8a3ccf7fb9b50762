import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';
import { useIntegrationServer } from '../helpers/integration';

/**
 * A script author's path, with tools nobody here wrote: generate typed clients from the live server's /openapi.json
 * (openapi-typescript with openapi-fetch, and @hey-api/openapi-ts), type-check a script written against them with
 * `tsc --strict`, and run it against that server. The document is only as good as what these tools make of it.
 */
const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..', '..');
const bin = (name: string) => path.join(ROOT, 'node_modules', '.bin', name);
const TOKEN = 'generated-client-test-token';
const ctx = useIntegrationServer({ server: { AUTH_ENABLED: 'true', SVC_API_TOKEN: TOKEN } });
let dir: string | undefined;

afterAll(async () => {
  if (dir) await fs.rm(dir, { recursive: true, force: true });
});

it('generates typed clients from /openapi.json, and a strict script written with them runs against the server', async () => {
  // Inside the repository, so the script resolves openapi-fetch from its node_modules.
  await fs.mkdir(path.join(ROOT, 'test-results'), { recursive: true });
  dir = await fs.mkdtemp(path.join(ROOT, 'test-results', 'generated-client-'));
  const document = `${ctx.server.url}/openapi.json`;
  await Promise.all([
    run(bin('openapi-typescript'), [document, '-o', path.join(dir, 'schema.ts')]),
    run(bin('openapi-ts'), ['-i', document, '-o', path.join(dir, 'hey')], { cwd: dir }),
  ]);
  const sdk = await fs.readFile(path.join(dir, 'hey', 'sdk.gen.ts'), 'utf8');
  for (const name of ['runAgent', 'streamRun', 'approveGate', 'rejectGate', 'cancelRun', 'listThreads']) {
    expect(sdk).toContain(`export const ${name} =`);
  }
  await fs.writeFile(path.join(dir, 'script.ts'), SCRIPT);

  const checked = await run(
    bin('tsc'),
    ['--strict', '--noEmit', '--target', 'es2022', '--module', 'preserve', '--moduleResolution', 'bundler'].concat([
      '--lib',
      'es2022,dom',
      '--types',
      'node',
      // The generated files are .ts and are checked; only the declaration files of node_modules are skipped.
      '--skipLibCheck',
      'script.ts',
    ]),
    { cwd: dir },
  ).catch((error: { stdout: string }) => ({ stdout: error.stdout, failed: true }));
  expect(checked.stdout).toBe('');

  const script = (await import(pathToFileURL(path.join(dir, 'script.ts')).href)) as {
    withOpenapiFetch(baseUrl: string, token: string): Promise<string[]>;
    withHeyApi(baseUrl: string, token: string): Promise<string[]>;
  };
  for (const client of [script.withOpenapiFetch, script.withHeyApi]) {
    expect(await client(ctx.server.url, TOKEN)).toEqual([
      'gate gate: Publish this review?',
      'approved: running',
      'done: ok',
      'threads: listed',
      'approve again: 409 conflict',
    ]);
  }
}, 120_000);

/** The script, as a script author would write it next to the generated files. */
const SCRIPT = `/**
 * What a script author writes with clients generated from /openapi.json: start a run, follow it to its gate,
 * approve, follow it to the end, list threads, and handle a 409 as a typed error; once with openapi-typescript and
 * openapi-fetch, once with @hey-api/openapi-ts.
 */
import createClient from 'openapi-fetch';
import type { components, paths } from './schema';
import { createClient as createHeyClient, createConfig } from './hey/client';
import { approveGate, listThreads, runAgent } from './hey/sdk.gen';
import type { Error as HeyError, RunEvent as HeyRunEvent } from './hey/types.gen';

type RunEvent = components['schemas']['RunEvent'];
type ErrorCode = components['schemas']['ErrorCode'];

/** An event stream read to its end (a run's stream ends at its gate or its last event). */
async function follow(baseUrl: string, streamUrl: string, token: string): Promise<RunEvent[]> {
  const res = await fetch(new URL(streamUrl, baseUrl), {
    headers: { authorization: \`Bearer \${token}\`, accept: 'text/event-stream' },
  });
  if (res.status === 204) return [];
  if (res.status !== 200) throw new Error(\`stream answered \${res.status}\`);
  const events: RunEvent[] = [];
  for (const frame of (await res.text()).split('\\n\\n')) {
    const data = frame.split('\\n').find((line) => line.startsWith('data:'));
    if (data) events.push(JSON.parse(data.slice('data:'.length)) as RunEvent);
  }
  return events;
}

const last = (events: { type: string }[]) => events.at(-1)?.type ?? 'nothing';

export async function withOpenapiFetch(baseUrl: string, token: string): Promise<string[]> {
  const steps: string[] = [];
  // JSON answers only: runAgent answers its event stream unless asked for JSON (see follow() for streams).
  const api = createClient<paths, 'application/json'>({ baseUrl, headers: { authorization: \`Bearer \${token}\` } });
  const started = await api.POST('/graphs/{agent}/run', {
    params: { path: { agent: 'review' } },
    body: { message: 'Review this change' },
    headers: { accept: 'application/json' },
  });
  if (!started.data) throw new Error(\`runAgent answered \${started.response?.status}\`);
  const { thread_id: threadId, stream_url: streamUrl } = started.data;
  const toGate = await follow(baseUrl, streamUrl, token);
  const waiting = toGate.at(-1);
  if (waiting?.type !== 'gate_waiting') throw new Error(\`the run stopped at \${last(toGate)}\`);
  steps.push(\`gate \${waiting.node}: \${waiting.question}\`);

  const decision = { params: { path: { id: threadId, gate: waiting.node } }, body: { reason: 'looks right' } };
  const approved = await api.POST('/threads/{id}/gates/{gate}/approve', decision);
  if (!approved.data) throw new Error(\`approveGate answered \${approved.response?.status}\`);
  steps.push(\`approved: \${approved.data.status}\`);
  const toEnd = await follow(baseUrl, approved.data.stream_url, token);
  const done = toEnd.at(-1);
  if (done?.type !== 'run_done') throw new Error(\`the run ended with \${last(toEnd)}\`);
  steps.push(\`done: \${done.output}\`);

  const threads = await api.GET('/threads', { params: { query: { limit: 20 } } });
  if (!threads.data) throw new Error(\`listThreads answered \${threads.response?.status}\`);
  steps.push(\`threads: \${threads.data.items.some((t) => t.id === threadId) ? 'listed' : 'missing'}\`);

  const again = await api.POST('/threads/{id}/gates/{gate}/approve', decision);
  if (again.error) {
    const code: ErrorCode = again.error.error.code;
    steps.push(\`approve again: \${again.response?.status} \${code}\`);
  }
  return steps;
}

export async function withHeyApi(baseUrl: string, token: string): Promise<string[]> {
  const steps: string[] = [];
  const client = createHeyClient(createConfig({ baseUrl, auth: () => token }));
  const started = await runAgent({
    client,
    path: { agent: 'review' },
    body: { message: 'Review this change' },
    headers: { accept: 'application/json' },
  });
  if (!started.data) throw new Error(\`runAgent answered \${started.response?.status}\`);
  const toGate = await follow(baseUrl, started.data.stream_url, token);
  const waiting: HeyRunEvent | undefined = toGate.at(-1);
  if (waiting?.type !== 'gate_waiting') throw new Error(\`the run stopped at \${last(toGate)}\`);
  steps.push(\`gate \${waiting.node}: \${waiting.question}\`);

  const decision = { client, path: { id: started.data.thread_id, gate: waiting.node }, body: {} };
  const approved = await approveGate(decision);
  if (!approved.data) throw new Error(\`approveGate answered \${approved.response?.status}\`);
  steps.push(\`approved: \${approved.data.status}\`);
  const toEnd = await follow(baseUrl, approved.data.stream_url, token);
  const done = toEnd.at(-1);
  if (done?.type !== 'run_done') throw new Error(\`the run ended with \${last(toEnd)}\`);
  steps.push(\`done: \${done.output}\`);

  const threads = await listThreads({ client, query: { limit: 20 } });
  if (!threads.data) throw new Error(\`listThreads answered \${threads.response?.status}\`);
  steps.push(\`threads: \${threads.data.items.some((t) => t.id === started.data.thread_id) ? 'listed' : 'missing'}\`);

  const again = await approveGate(decision);
  if (again.error) {
    const error: HeyError = again.error;
    steps.push(\`approve again: \${again.response?.status} \${error.error.code}\`);
  }
  return steps;
}
`;
