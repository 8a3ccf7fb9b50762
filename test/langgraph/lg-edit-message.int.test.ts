import { Client, type ThreadState } from '@langchain/langgraph-sdk';
import { getBranchContext, getMessagesMetadataMap } from '@langchain/langgraph-sdk/ui';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { type LgMessage as Message } from './lg-stream-parts';

/**
 * Editing an earlier message and regenerating an answer, as Agent Chat UI does through `useStream`: the checkpoint it
 * runs from is worked out by the SDK's own branching code (`getMessagesMetadataMap`, what `getMessagesMetadata`
 * answers), from the history this server lists. The edited run replaces the message it edits and what followed it;
 * the history keeps both branches, one tree.
 */
const API_TOKEN = 'langgraph-edit-admin-token-0123456789';
const ctx = useIntegrationServer({ server: false });
let server: TestServer;
let client: Client;

beforeAll(async () => {
  server = await ctx.start({ AUTH_ENABLED: 'true', SVC_API_TOKEN: API_TOKEN });
  client = new Client({ apiUrl: `${server.url}/lg`, apiKey: API_TOKEN });
});
afterAll(() => server?.close());

type Values = { messages: Message[] };

const textsOf = (values: unknown) => (values as Values).messages.map((m) => `${m.type}:${m.content}`);

/** The checkpoint Agent Chat UI runs from to edit or regenerate `messageId`: its first-seen state's parent. */
async function parentCheckpointOf(threadId: string, messageId: string) {
  const history = (await client.threads.getHistory<Values>(threadId, { limit: 100 })) as ThreadState<Values>[];
  const branchContext = getBranchContext('', history);
  const metadata = getMessagesMetadataMap({
    history,
    branchContext,
    getMessages: (values: Values) => values.messages ?? [],
  } as never) as { messageId: string; firstSeenState?: ThreadState<Values> }[];
  const seen = metadata.find((m) => m.messageId === messageId)?.firstSeenState;
  expect(seen, `the SDK finds where ${messageId} was first seen`).toBeDefined();
  return { parent: seen!.parent_checkpoint, history, branchContext };
}

/** The prompt the local runtime was last asked, as one text. */
const lastPrompt = () =>
  ((ctx.model.requests.at(-1)!.messages ?? []) as { content: string }[]).map((m) => m.content).join('\n');

async function turn(threadId: string, text: string, reply: string, checkpoint?: unknown) {
  ctx.model.reply([reply]);
  return (await client.runs.wait(threadId, 'summary', {
    input: { messages: [{ type: 'human', content: text }] },
    ...(checkpoint === undefined ? {} : { checkpoint: checkpoint as never }),
  })) as Values;
}

describe('an edited message', () => {
  it('replaces a later message and what followed it; the conversation before it is kept, in the values and the prompt', async () => {
    const thread = await client.threads.create();
    const threadId = thread.thread_id;
    await turn(threadId, 'Summarise the parser', 'Parser summary.');
    const second = await turn(threadId, 'What about its tests?', 'Tests summary.');
    const asked = second.messages.find((m) => m.content === 'What about its tests?')!;

    const { parent, history } = await parentCheckpointOf(threadId, asked.id);
    // Where the first run ended: the SDK names that checkpoint, one of the history's, as the message's parent.
    const firstEnd = history.find((h) => h.checkpoint.checkpoint_id === parent?.checkpoint_id)!;
    expect(firstEnd.next).toEqual([]);
    expect(textsOf(firstEnd.values)).toEqual([
      'human:Summarise the parser',
      'ai:Parser summary.',
      'ai:Parser summary.',
      'ai:Parser summary.',
    ]);

    const edited = await turn(threadId, 'What about its docs?', 'Docs summary.', parent);
    expect(textsOf(edited)).toEqual([
      'human:Summarise the parser',
      'ai:Parser summary.',
      'ai:Parser summary.',
      'ai:Parser summary.',
      'human:What about its docs?',
      'ai:Docs summary.',
      'ai:Docs summary.',
      'ai:Docs summary.',
    ]);
    // The model was asked with the first exchange, and never saw the message the edit replaced.
    expect(lastPrompt()).toContain('Summarise the parser');
    expect(lastPrompt()).toContain('What about its docs?');
    expect(lastPrompt()).not.toContain('What about its tests?');

    // The thread now is the edited branch; its history holds both, as one tree the SDK reads as a fork.
    expect(textsOf((await client.threads.getState(threadId)).values)).toEqual(textsOf(edited));
    const after = await parentCheckpointOf(threadId, edited.messages[4]!.id);
    expect(after.parent?.checkpoint_id).toBe(firstEnd.checkpoint.checkpoint_id);
    const children = after.history.filter(
      (h) => h.parent_checkpoint?.checkpoint_id === firstEnd.checkpoint.checkpoint_id,
    );
    expect(children).toHaveLength(2);
    const options = after.branchContext.branchByCheckpoint[children[0]!.checkpoint.checkpoint_id!]?.branchOptions;
    expect(options).toHaveLength(2);

    // A next message follows the edited branch.
    const next = await turn(threadId, 'And the changelog?', 'Changelog summary.');
    expect(textsOf(next).slice(0, 5)).toEqual(textsOf(edited).slice(0, 5));
    expect(textsOf(next)).not.toContain('human:What about its tests?');
  });

  it("edits the thread's first message: the run starts the thread again, with nothing before it", async () => {
    const thread = await client.threads.create();
    const threadId = thread.thread_id;
    const first = await turn(threadId, 'Summarise the lexer', 'Lexer summary.');
    await turn(threadId, 'And the parser?', 'Parser summary.');

    const { parent } = await parentCheckpointOf(threadId, first.messages[0]!.id);
    expect(parent?.checkpoint_id).toBeTruthy();
    // The thread's start: no messages, nothing run.
    expect(
      textsOf((await client.threads.getState(threadId, parent!.checkpoint_id!)).values ?? { messages: [] }),
    ).toEqual([]);

    const edited = await turn(threadId, 'Summarise the tokenizer', 'Tokenizer summary.', parent);
    expect(textsOf(edited)).toEqual([
      'human:Summarise the tokenizer',
      'ai:Tokenizer summary.',
      'ai:Tokenizer summary.',
      'ai:Tokenizer summary.',
    ]);
    expect(lastPrompt()).not.toContain('lexer');
    expect(lastPrompt()).not.toContain('parser');
  });

  it('regenerates an answer: no input, the same question asked again from before the answer', async () => {
    const thread = await client.threads.create();
    const threadId = thread.thread_id;
    const done = await turn(threadId, 'Summarise the cache', 'First try.');
    const answer = done.messages.at(-1)!;

    const { parent } = await parentCheckpointOf(threadId, answer.id);
    ctx.model.reply(['Second try.']);
    const again = (await client.runs.wait(threadId, 'summary', { input: null, checkpoint: parent as never })) as Values;
    // The phases before the answer keep their outputs; the answer is the new one, under the new run's ids, in the
    // values and in the history alike.
    expect(textsOf(again)).toEqual(['human:Summarise the cache', 'ai:First try.', 'ai:First try.', 'ai:Second try.']);
    expect(lastPrompt()).toContain('Summarise the cache');
    const state = await client.threads.getState<Values>(threadId);
    expect(state.values.messages).toEqual(again.messages);
    expect(again.messages.map((m) => m.id)).not.toContain(answer.id);
  });

  it('refuses a run from where a run ended with no message, saying what to send', async () => {
    const thread = await client.threads.create();
    const threadId = thread.thread_id;
    await turn(threadId, 'Summarise the build', 'Build summary.');
    const firstEnd = (await client.threads.getState(threadId)).checkpoint;
    await turn(threadId, 'And the deploy?', 'Deploy summary.');
    const refused = await fetch(`${server.url}/lg/threads/${threadId}/runs/wait`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': API_TOKEN },
      body: JSON.stringify({ assistant_id: 'summary', input: null, checkpoint: firstEnd }),
    });
    expect(refused.status).toBe(400);
    expect((await refused.json()).error.message).toBe(
      `checkpoint ${firstEnd.checkpoint_id} is where a run ended: nothing runs after it; send a message, or fork an earlier one`,
    );
  });
});
