/**
 * A page of the tests' own (not a product page) that talks to the LangGraph API under /lg through LangChain's React
 * `useStream`, as a developer's app would: it sends a message, shows the streamed messages, the interrupt a gate
 * stops at with a button that approves it, and the thread's history after a reload. Written without JSX so that it
 * needs no compiler option of its own; built by lg-use-stream.spec.ts with Vite.
 */
import { useStream } from '@langchain/langgraph-sdk/react';
import { createElement as h, useState } from 'react';
import { createRoot } from 'react-dom/client';

interface GateInterrupt {
  action_requests: { name: string; args: Record<string, string>; description: string }[];
}

/** The key and the agent come in the page's query, the thread once it has one. */
const query = new URLSearchParams(location.search);

function remember(threadId: string) {
  query.set('thread', threadId);
  history.replaceState(null, '', `?${query}`);
}

function App() {
  const [text, setText] = useState('');
  const [finished, setFinished] = useState(0);
  const thread = useStream<Record<string, unknown>, { InterruptType: GateInterrupt }>({
    apiUrl: `${location.origin}/lg`,
    apiKey: query.get('key') ?? undefined,
    assistantId: query.get('agent') ?? 'review',
    messagesKey: 'messages',
    threadId: query.get('thread'),
    onThreadId: remember,
    onFinish: () => setFinished((n) => n + 1),
    fetchStateHistory: true,
  });
  const request = thread.interrupt?.value?.action_requests?.[0];

  return h(
    'div',
    null,
    h(
      'form',
      {
        onSubmit: (e: { preventDefault(): void }) => {
          e.preventDefault();
          void thread.submit({ messages: [{ type: 'human', content: text }] });
          setText('');
        },
      },
      h('input', {
        'data-testid': 'message',
        value: text,
        onChange: (e: { target: { value: string } }) => setText(e.target.value),
      }),
      h('button', { 'data-testid': 'send', type: 'submit' }, 'Send'),
    ),
    h('p', { 'data-testid': 'status' }, thread.isLoading ? 'streaming' : 'idle'),
    h('p', { 'data-testid': 'finished' }, String(finished)),
    h('p', { 'data-testid': 'history' }, String(thread.history?.length ?? 0)),
    thread.error ? h('p', { 'data-testid': 'error' }, String(thread.error)) : null,
    h(
      'ol',
      null,
      thread.messages.map((m) =>
        h('li', { key: m.id, 'data-testid': `message-${m.type}`, 'data-name': m.name ?? '' }, String(m.content)),
      ),
    ),
    request
      ? h(
          'section',
          { 'data-testid': 'interrupt' },
          h('p', { 'data-testid': 'interrupt-question' }, request.description),
          h('pre', { 'data-testid': 'interrupt-args' }, JSON.stringify(request.args)),
          h(
            'button',
            {
              'data-testid': 'approve',
              onClick: () =>
                void thread.submit(undefined, { command: { resume: { decisions: [{ type: 'approve' }] } } }),
            },
            'Approve',
          ),
        )
      : null,
  );
}

createRoot(document.getElementById('root')!).render(h(App));
