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
 * `tsc --strict`, and run it against that server. The document is only as good as what these tools make of it, at
 * their default settings: no Accept header set by hand, hey-api's documented `auth` option, its SSE client as it is.
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

it('generates typed clients from /openapi.json, and a strict script written with them runs a whole session', async () => {
  // Inside the repository, so the script resolves openapi-fetch from its node_modules.
  await fs.mkdir(path.join(ROOT, 'test-results'), { recursive: true });
  dir = await fs.mkdtemp(path.join(ROOT, 'test-results', 'generated-client-'));
  const document = `${ctx.server.url}/openapi.json`;
  await Promise.all([
    run(bin('openapi-typescript'), [document, '-o', path.join(dir, 'schema.ts')]),
    run(bin('openapi-ts'), ['-i', document, '-o', path.join(dir, 'hey')], { cwd: dir }),
  ]);
  const sdk = await fs.readFile(path.join(dir, 'hey', 'sdk.gen.ts'), 'utf8');
  for (const name of ['startRun', 'streamRun', 'approveGate', 'rejectGate', 'cancelRun', 'listThreads']) {
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

  // runAgent's one 200 in two media types is typed as one (openapi-fetch: RunAccepted | RunEvent, where data.run_id
  // does not type-check): what each tool shows beside it sends its author to startRun, which the script calls.
  const schema = await fs.readFile(path.join(dir, 'schema.ts'), 'utf8');
  const docOf = (source: string, declaration: string) => {
    const at = source.indexOf(declaration);
    return source.slice(source.lastIndexOf('/**', at), at);
  };
  for (const doc of [docOf(sdk, 'export const runAgent ='), docOf(schema, 'post: operations["runAgent"]')]) {
    expect(doc).toContain('`data.run_id` does not type-check');
    expect(doc).toContain('call startRun instead');
  }

  const script = (await import(pathToFileURL(path.join(dir, 'script.ts')).href)) as {
    withOpenapiFetch(baseUrl: string, token: string): Promise<string[]>;
    withHeyApi(baseUrl: string, token: string): Promise<string[]>;
  };
  for (const client of [script.withOpenapiFetch, script.withHeyApi]) {
    expect(await client(ctx.server.url, TOKEN)).toEqual([
      'started: running, the same run again under its key',
      'gate gate: Publish this review?',
      'approved without a body: running',
      'approved again under its key: 202, replayed, the same answer',
      'done: ok, approved once by api-token',
      'threads: listed',
      'approve without a key after the end: 409 conflict',
    ]);
  }
}, 180_000);

/** The script, as a script author would write it next to the generated files, reading only the document. */
const SCRIPT = `/**
 * What a script author writes with clients generated from /openapi.json, at their default settings: start a run
 * without streaming (retried under its Idempotency-Key), follow its stream to the gate (passing the answer's
 * last_event_id as it is), approve without a body,
 * send the approval again under the same key (as after a lost answer), follow the run to its end, list threads,
 * and read a 409 as a typed error; once with openapi-typescript and openapi-fetch, once with @hey-api/openapi-ts.
 */
import { randomUUID } from 'node:crypto';
import createClient from 'openapi-fetch';
import type { components, paths } from './schema';
import { createClient as createHeyClient, createConfig } from './hey/client';
import { approveGate, listThreads, startRun, streamRun } from './hey/sdk.gen';
import type { Error as HeyError, RunEvent as HeyRunEvent } from './hey/types.gen';

type RunEvent = components['schemas']['RunEvent'];
type ErrorCode = components['schemas']['ErrorCode'];

/** The events of a text/event-stream body, read to its end (a run's stream ends at its gate or its last event). */
async function readEvents(body: ReadableStream<Uint8Array> | null): Promise<RunEvent[]> {
  const events: RunEvent[] = [];
  if (!body) return events;
  const text = await new Response(body).text();
  for (const frame of text.split('\\n\\n')) {
    const data = frame.split('\\n').find((line) => line.startsWith('data:'));
    if (data) events.push(JSON.parse(data.slice('data:'.length)) as RunEvent);
  }
  return events;
}

const last = (events: { type: string }[]) => events.at(-1)?.type ?? 'nothing';

export async function withOpenapiFetch(baseUrl: string, token: string): Promise<string[]> {
  const steps: string[] = [];
  const api = createClient<paths>({ baseUrl, headers: { authorization: \`Bearer \${token}\` } });
  const follow = async (id: string, after: number) => {
    const { response } = await api.GET('/runs/{id}/stream', {
      params: { path: { id }, query: { last_event_id: after } },
      parseAs: 'stream',
    });
    if (response.status !== 200) throw new Error(\`streamRun answered \${response.status}\`);
    return readEvents(response.body);
  };

  const start = {
    params: { path: { agent: 'review' }, header: { 'Idempotency-Key': randomUUID() } },
    body: { message: 'Review this change' },
  };
  const started = await api.POST('/agents/{agent}/runs', start);
  if (!started.data) throw new Error(\`startRun answered \${started.response.status}\`);
  const startedAgain = await api.POST('/agents/{agent}/runs', start);
  const sameRun = startedAgain.data?.run_id === started.data.run_id;
  steps.push(\`started: \${started.data.status}\${sameRun ? ', the same run again under its key' : ', a second run'}\`);

  const toGate = await follow(started.data.run_id, started.data.last_event_id);
  const waiting = toGate.at(-1);
  if (waiting?.type !== 'gate_waiting') throw new Error(\`the run stopped at \${last(toGate)}\`);
  steps.push(\`gate \${waiting.node}: \${waiting.question}\`);

  const path = { id: started.data.thread_id, gate: waiting.node };
  const decision = { params: { path, header: { 'Idempotency-Key': randomUUID() } } };
  const approved = await api.POST('/threads/{id}/gates/{gate}/approve', decision);
  if (!approved.data) throw new Error(\`approveGate answered \${approved.response.status}\`);
  steps.push(\`approved without a body: \${approved.data.status}\`);
  const again = await api.POST('/threads/{id}/gates/{gate}/approve', decision);
  const replayed = again.response.headers.get('Idempotent-Replayed') === 'true';
  const same = JSON.stringify(again.data) === JSON.stringify(approved.data);
  steps.push(
    \`approved again under its key: \${again.response.status}\${replayed ? ', replayed' : ''}\${same ? ', the same answer' : ''}\`,
  );

  const toEnd = await follow(started.data.run_id, approved.data.last_event_id);
  const done = toEnd.at(-1);
  if (done?.type !== 'run_done') throw new Error(\`the run ended with \${last(toEnd)}\`);
  const approvals = toEnd.flatMap((event) => (event.type === 'gate_approved' ? [event] : []));
  steps.push(\`done: \${done.output}, approved \${approvals.length === 1 ? 'once' : \`\${approvals.length} times\`} by \${approvals[0]?.deciders?.join(', ')}\`);

  const threads = await api.GET('/threads', { params: { query: { limit: 20 } } });
  if (!threads.data) throw new Error(\`listThreads answered \${threads.response.status}\`);
  steps.push(\`threads: \${threads.data.items.some((t) => t.id === started.data.thread_id) ? 'listed' : 'missing'}\`);

  const late = await api.POST('/threads/{id}/gates/{gate}/approve', { params: { path } });
  if (late.error) {
    const code: ErrorCode = late.error.error.code;
    steps.push(\`approve without a key after the end: \${late.response.status} \${code}\`);
  }
  return steps;
}

export async function withHeyApi(baseUrl: string, token: string): Promise<string[]> {
  const steps: string[] = [];
  const client = createHeyClient(createConfig({ baseUrl, auth: () => token }));
  const follow = async (id: string, after: number) => {
    const { stream } = await streamRun({ client, path: { id }, query: { last_event_id: after } });
    const events: HeyRunEvent[] = [];
    for await (const event of stream) if (event) events.push(event);
    return events;
  };

  const start = {
    client,
    path: { agent: 'review' },
    headers: { 'Idempotency-Key': randomUUID() },
    body: { message: 'Review this change' },
  };
  const started = await startRun(start);
  if (!started.data) throw new Error(\`startRun answered \${started.response?.status}\`);
  const startedAgain = await startRun(start);
  const sameRun = startedAgain.data?.run_id === started.data.run_id;
  steps.push(\`started: \${started.data.status}\${sameRun ? ', the same run again under its key' : ', a second run'}\`);

  const toGate = await follow(started.data.run_id, started.data.last_event_id);
  const waiting = toGate.at(-1);
  if (waiting?.type !== 'gate_waiting') throw new Error(\`the run stopped at \${last(toGate)}\`);
  steps.push(\`gate \${waiting.node}: \${waiting.question}\`);

  const path = { id: started.data.thread_id, gate: waiting.node };
  const decision = { client, path, headers: { 'Idempotency-Key': randomUUID() } };
  const approved = await approveGate(decision);
  if (!approved.data) throw new Error(\`approveGate answered \${approved.response?.status}\`);
  steps.push(\`approved without a body: \${approved.data.status}\`);
  const again = await approveGate(decision);
  const replayed = again.response?.headers.get('Idempotent-Replayed') === 'true';
  const same = JSON.stringify(again.data) === JSON.stringify(approved.data);
  steps.push(
    \`approved again under its key: \${again.response?.status}\${replayed ? ', replayed' : ''}\${same ? ', the same answer' : ''}\`,
  );

  const toEnd = await follow(started.data.run_id, approved.data.last_event_id);
  const done = toEnd.at(-1);
  if (done?.type !== 'run_done') throw new Error(\`the run ended with \${last(toEnd)}\`);
  const approvals = toEnd.flatMap((event) => (event.type === 'gate_approved' ? [event] : []));
  steps.push(\`done: \${done.output}, approved \${approvals.length === 1 ? 'once' : \`\${approvals.length} times\`} by \${approvals[0]?.deciders?.join(', ')}\`);

  const threads = await listThreads({ client, query: { limit: 20 } });
  if (!threads.data) throw new Error(\`listThreads answered \${threads.response?.status}\`);
  steps.push(\`threads: \${threads.data.items.some((t) => t.id === started.data.thread_id) ? 'listed' : 'missing'}\`);

  const late = await approveGate({ client, path });
  if (late.error) {
    const error: HeyError = late.error;
    steps.push(\`approve without a key after the end: \${late.response?.status} \${error.error.code}\`);
  }
  return steps;
}
`;
