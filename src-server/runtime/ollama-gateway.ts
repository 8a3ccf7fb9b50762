import { Ollama } from 'ollama';
import type { ModelCall, ModelGateway } from './model-gateway';

/**
 * Interim gateway: every model on the local runtime, no queue. It speaks Ollama's protocol with the
 * official client rather than through LangChain, whose per-chunk message objects cost more than
 * the rest of the token path together.
 */
export function ollamaGateway(baseUrl: string): ModelGateway {
  const client = new Ollama({ host: baseUrl });
  return {
    async stream(call: ModelCall) {
      call.signal.throwIfAborted();
      const response = await client.chat({ model: call.model.replace(/^local:/, ''), messages: call.messages, stream: true });
      const abort = () => response.abort();
      call.signal.addEventListener('abort', abort, { once: true });
      let text = '';
      try {
        for await (const chunk of response) {
          const piece = chunk.message.content;
          if (!piece) continue;
          text += piece;
          call.onToken(piece);
        }
      } finally {
        call.signal.removeEventListener('abort', abort);
      }
      call.signal.throwIfAborted();
      return text;
    },
  };
}
