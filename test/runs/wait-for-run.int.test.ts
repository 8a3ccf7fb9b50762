import { describe, expect, it } from 'vitest';
import type { RunDetail } from '../../src-server/contracts/runs';
import { useIntegrationServer } from '../helpers/integration';

/**
 * A script that starts a run without a stream (`POST /agents/{agent}/runs`) waits for it with
 * `GET /runs/{id}/wait`: to its gate, then, after deciding, to its end; a wait that runs out answers `running`.
 */
const ctx = useIntegrationServer();

const waitFor = async (runId: string, timeoutS?: number) => {
  const answer = await ctx.server.request(`/runs/${runId}/wait${timeoutS ? `?timeout_s=${timeoutS}` : ''}`);
  expect(answer.status).toBe(200);
  return (await answer.json()) as RunDetail;
};

describe('waiting for a run without a stream', () => {
  it('waits to the gate, then after the approval to the end', async () => {
    ctx.model.reply(['A ', 'slow ', 'review.'], 200);
    const started = await ctx.server.request('/agents/review/runs', { method: 'POST', json: { message: 'review' } });
    const { run_id, thread_id } = (await started.json()) as { run_id: string; thread_id: string };
    const atGate = await waitFor(run_id);
    expect(atGate).toMatchObject({ status: 'waiting_approval', pending_gate: { node: 'gate' } });
    expect(atGate.nodes.find((n) => n.node_id === 'analysis')?.output).toBe('A slow review.');

    await ctx.server.request(`/threads/${thread_id}/gates/gate/approve`, { method: 'POST', json: {} });
    const done = await waitFor(run_id);
    expect(done).toMatchObject({ status: 'completed', output: 'A slow review.' });
    // A finished run answers at once.
    expect((await waitFor(run_id, 1)).status).toBe('completed');
  });

  it('answers `running` when the wait is over first, and refuses a wait over a minute', async () => {
    ctx.model.reply(['tick ', 'tock ', 'tick ', 'tock'], 800);
    const started = await ctx.server.request('/agents/summary/runs', { method: 'POST', json: { message: 'slow' } });
    const { run_id } = (await started.json()) as { run_id: string };
    const before = Date.now();
    expect((await waitFor(run_id, 1)).status).toBe('running');
    expect(Date.now() - before).toBeGreaterThanOrEqual(900);
    expect((await ctx.server.request(`/runs/${run_id}/wait?timeout_s=61`)).status).toBe(400);
    expect((await waitFor(run_id, 60)).status).toBe('completed');
  });
});
