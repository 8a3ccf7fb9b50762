import { ChatOllama } from '@langchain/ollama';
import type { ModelCall, ModelGateway } from './model-gateway';

/** Interim gateway: every model on the local runtime, no queue. Replaced by src-server/models. */
export function ollamaGateway(baseUrl: string): ModelGateway {
  return {
    async stream(call: ModelCall) {
      const model = new ChatOllama({ baseUrl, model: call.model.replace(/^local:/, '') });
      let text = '';
      for await (const chunk of await model.stream(call.messages.map((m) => [m.role, m.content] as [string, string]), { signal: call.signal })) {
        const piece = typeof chunk.content === 'string' ? chunk.content : '';
        if (!piece) continue;
        text += piece;
        call.onToken(piece);
      }
      return text;
    },
  };
}
