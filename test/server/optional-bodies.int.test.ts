import http from 'node:http';
import { describe, expect, it } from 'vitest';
import type { RunAccepted } from '../../src-server/contracts/runs';
import { useIntegrationServer } from '../helpers/integration';
import { readEvents } from '../helpers/sse';

/**
 * Approve, reject, cancel, queue reset and a fork take a body every field of which may be left out, so the body may
 * be left out: sent as Node's fetch and Python's requests send a POST without data (`Content-Length: 0`, no
 * Content-Type), or with a JSON Content-Type and nothing after it. The document says so (`required: false`).
 */
const TOKEN = 'optional-bodies-test-token-0123';
const ctx = useIntegrationServer({ server: { AUTH_ENABLED: 'true', SVC_API_TOKEN: TOKEN } });

/** A POST without a body, with exactly these headers (fetch would add its own). */
function bodiless(path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  const url = new URL(path, ctx.server.url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-length': '0', ...headers } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function atGate(): Promise<RunAccepted> {
  ctx.model.reply(['The analysis says: ship it.']);
  const started = await ctx.server.request('/agents/review/runs', {
    method: 'POST',
    json: { message: 'Review this change' },
  });
  const run = (await started.json()) as RunAccepted;
  expect((await readEvents(await ctx.server.request(run.stream_url))).at(-1)!.data.type).toBe('gate_waiting');
  return run;
}

describe('a body that may be left out', () => {
  it('is optional in the document where every field is, and required elsewhere', async () => {
    const doc = (await (await ctx.server.request('/openapi.json')).json()) as {
      paths: Record<string, Record<string, { requestBody?: { required: boolean } }>>;
    };
    const required = (path: string) => doc.paths[path]!.post!.requestBody!.required;
    for (const path of [
      '/threads/{id}/gates/{gate}/approve',
      '/threads/{id}/gates/{gate}/reject',
      '/runs/{id}/cancel',
      '/queue/reset',
      '/threads/{id}/checkpoints/{checkpoint_id}/run',
      '/threads/{id}/checkpoints/{checkpoint_id}/runs',
    ]) {
      expect(required(path), path).toBe(false);
    }
    for (const path of ['/graphs/{agent}/run', '/agents/{agent}/runs', '/threads/{id}/gates/{gate}/respond']) {
      expect(required(path), path).toBe(true);
    }
  });

  it('may be left out of an approval and a rejection (Content-Length: 0, no Content-Type)', async () => {
    const approved = await atGate();
    const approve = await bodiless(`/threads/${approved.thread_id}/gates/gate/approve`);
    expect(approve.status).toBe(202);
    expect(JSON.parse(approve.body)).toMatchObject({ run_id: approved.run_id, status: 'running' });
    expect((await readEvents(await ctx.server.request(`/runs/${approved.run_id}/stream`))).at(-1)!.data).toMatchObject({
      type: 'run_done',
    });

    const rejected = await atGate();
    const reject = await bodiless(`/threads/${rejected.thread_id}/gates/gate/reject`, {
      'content-type': 'application/json',
    });
    expect(reject.status).toBe(202);
    const events = await readEvents(await ctx.server.request(`/runs/${rejected.run_id}/stream`));
    expect(events.at(-1)!.data).toEqual({ type: 'run_rejected', run_id: rejected.run_id, reason: null });
  });

  it('may be left out of a cancel and a queue reset', async () => {
    const run = await atGate();
    const cancel = await bodiless(`/runs/${run.run_id}/cancel`);
    expect(cancel.status).toBe(200);
    expect(JSON.parse(cancel.body)).toMatchObject({ status: 'cancelled' });
    const reset = await bodiless('/queue/reset');
    expect(reset.status).toBe(200);
  });

  it('may be left out of a fork, which runs on from the checkpoint as it is', async () => {
    const run = await atGate();
    await ctx.server.request(`/threads/${run.thread_id}/gates/gate/reject`, { method: 'POST' });
    await readEvents(await ctx.server.request(`/runs/${run.run_id}/stream`));
    const checkpoints = (await (await ctx.server.request(`/threads/${run.thread_id}/checkpoints`)).json()) as {
      checkpoint_id: string;
      node: string | null;
    }[];
    const afterIntake = checkpoints.find((c) => c.node === 'intake')!;
    ctx.model.reply(['The analysis, again.']);
    const fork = await bodiless(`/threads/${run.thread_id}/checkpoints/${afterIntake.checkpoint_id}/runs`);
    expect(fork.status).toBe(202);
    const forked = JSON.parse(fork.body) as RunAccepted;
    expect(forked.run_id).not.toBe(run.run_id);
    expect((await readEvents(await ctx.server.request(forked.stream_url))).at(-1)!.data.type).toBe('gate_waiting');
  });

  it('is still refused when it is there and is not JSON, and a required body is asked for', async () => {
    const run = await atGate();
    const text = await ctx.server.request(`/runs/${run.run_id}/cancel`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'stop',
    });
    expect(text.status).toBe(415);
    const respond = await bodiless(`/threads/${run.thread_id}/gates/gate/respond`);
    expect(respond.status).toBe(400);
    expect(JSON.parse(respond.body).error.code).toBe('invalid_request');
  });
});
