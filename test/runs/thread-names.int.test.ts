import { describe, expect, it } from 'vitest';
import type { Checkpoint, RunAccepted, Thread } from '../../src-server/contracts/runs';
import { useIntegrationServer } from '../helpers/integration';

/**
 * A thread keeps the name it was given: its first message, cut near 80 characters, unless a person renamed it
 * (PATCH /threads/{id}); a later run on it, a queued one, a fork or a rename of another thread do not change it.
 */
const ctx = useIntegrationServer();

const json = async <T>(res: Response, status = 200): Promise<T> => {
  expect(res.status).toBe(status);
  return (await res.json()) as T;
};

async function run(message: string, threadId?: string): Promise<RunAccepted> {
  ctx.model.reply(['fine']);
  const accepted = await json<RunAccepted>(
    await ctx.server.request('/agents/summary/runs', {
      method: 'POST',
      json: { message, ...(threadId ? { thread_id: threadId } : {}) },
    }),
    202,
  );
  await ctx.server.request(`/runs/${accepted.run_id}/wait?timeout_s=60`);
  return accepted;
}

const thread = async (id: string) => json<Thread>(await ctx.server.request(`/threads/${id}`));

describe('thread names', () => {
  it('a thread is named after its first message, and keeps the name through later runs and a fork', async () => {
    const first = await run('Summarise   the loader\nchanges');
    expect((await thread(first.thread_id)).name).toBe('Summarise the loader changes');

    await run('a second question on the same thread', first.thread_id);
    const after = await thread(first.thread_id);
    expect(after.last_message).toBe('a second question on the same thread');
    expect(after.name).toBe('Summarise the loader changes');

    const checkpoints = await json<Checkpoint[]>(await ctx.server.request(`/threads/${first.thread_id}/checkpoints`));
    const from = checkpoints.find((c) => c.next.length > 0)!;
    ctx.model.reply(['forked']);
    const forked = await json<RunAccepted>(
      await ctx.server.request(`/threads/${first.thread_id}/checkpoints/${from.checkpoint_id}/runs`, {
        method: 'POST',
        json: { message: 'a forked message' },
      }),
      202,
    );
    const detail = await json<{ forked_from: unknown }>(
      await ctx.server.request(`/runs/${forked.run_id}/wait?timeout_s=60`),
    );
    expect(detail.forked_from).toEqual({ run_id: first.run_id, checkpoint_id: from.checkpoint_id });
    expect((await thread(first.thread_id)).name).toBe('Summarise the loader changes');
    const plain = await json<{ forked_from: unknown }>(await ctx.server.request(`/runs/${first.run_id}`));
    expect(plain.forked_from).toBeNull();
  });

  it('a long first message is cut at a word, with an ellipsis', async () => {
    const words = Array.from({ length: 30 }, (_, i) => `word${i}`).join(' ');
    const { thread_id } = await run(words);
    const { name } = await thread(thread_id);
    expect(name!.length).toBeLessThanOrEqual(81);
    expect(name).toMatch(/^word0 word1 .* word\d+…$/);
    expect(words.startsWith(name!.slice(0, -1))).toBe(true);
  });

  it('an empty thread is named by its first run', async () => {
    const created = await json<Thread>(
      await ctx.server.request('/threads', { method: 'POST', json: { agent: 'summary' } }),
      201,
    );
    expect(created.name).toBeNull();
    await run('the first words of an empty thread', created.id);
    expect((await thread(created.id)).name).toBe('the first words of an empty thread');
  });

  it('a rename sticks: later runs do not change it, and the list keeps the thread where it was', async () => {
    const { thread_id } = await run('to be renamed');
    const before = await thread(thread_id);
    const renamed = await json<Thread>(
      await ctx.server.request(`/threads/${thread_id}`, { method: 'PATCH', json: { name: '  Loader review  ' } }),
    );
    expect(renamed.name).toBe('Loader review');
    expect(renamed.updated_at).toBe(before.updated_at);
    expect((await thread(thread_id)).name).toBe('Loader review');

    await run('another question', thread_id);
    expect((await thread(thread_id)).name).toBe('Loader review');
    const listed = await json<{ items: Thread[] }>(await ctx.server.request('/threads?limit=5'));
    expect(listed.items.find((t) => t.id === thread_id)?.name).toBe('Loader review');
  });

  it('an empty name is refused, and an unknown thread is 404', async () => {
    const { thread_id } = await run('keeps its name');
    const empty = await ctx.server.request(`/threads/${thread_id}`, { method: 'PATCH', json: { name: '   ' } });
    expect(empty.status).toBe(400);
    expect((await thread(thread_id)).name).toBe('keeps its name');
    const missing = await ctx.server.request('/threads/6f1c2b3a-4d5e-4f60-8a7b-9c0d1e2f3a4b', {
      method: 'PATCH',
      json: { name: 'x' },
    });
    expect(missing.status).toBe(404);
  });
});
