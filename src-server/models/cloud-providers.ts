import { ChatAnthropic } from '@langchain/anthropic';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { ChatGoogleGenerativeAI } from '@langchain/google-genai';
import { ChatOpenAI } from '@langchain/openai';
import type { Config } from '../config';
import type { ProviderId } from '../contracts/models';
import { badRequest } from '../contracts/errors';
import { ProviderNotConfiguredError } from './errors';
import { parseModel } from './model-ref';

type CloudId = Exclude<ProviderId, 'local'>;

export interface CloudProvider {
  id: CloudId;
  name: string;
  keyVariable: 'CLOUD_A_API_KEY' | 'CLOUD_B_API_KEY' | 'CLOUD_C_API_KEY';
  /** Well-known models offered in lists; any other name the provider knows works too. */
  models: string[];
  create(config: Config, model: string): BaseChatModel;
}

interface GeminiContent {
  role: string;
  parts: object[];
}
type GeminiRequestBuilder = (...args: unknown[]) => { contents: GeminiContent[] };

const answersCalls = (content: GeminiContent | undefined) =>
  content !== undefined && content.parts.length > 0 && content.parts.every((part) => 'functionResponse' in part);

/**
 * Gemini refuses the answers to one turn's function calls unless one content holds them all ("the number of function
 * response parts is equal to the number of function call parts"); LangChain's client writes a content per tool
 * message. Its request is built by a private method, so the client is given one that joins the answers after it.
 */
function joinFunctionResponses(chat: ChatGoogleGenerativeAI): ChatGoogleGenerativeAI {
  const client = chat as unknown as { _buildGenerateContentRequest?: GeminiRequestBuilder };
  const build = client._buildGenerateContentRequest?.bind(chat);
  if (!build) throw new Error('@langchain/google-genai no longer builds its requests in _buildGenerateContentRequest');
  client._buildGenerateContentRequest = (...args) => {
    const request = build(...args);
    const contents: GeminiContent[] = [];
    for (const content of request.contents) {
      const last = contents.at(-1);
      if (answersCalls(content) && answersCalls(last))
        contents[contents.length - 1] = { ...last!, parts: [...last!.parts, ...content.parts] };
      else contents.push(content);
    }
    return { ...request, contents };
  };
  return chat;
}

type GeminiStream = (...args: unknown[]) => Promise<{ response: Promise<unknown> }>;

/**
 * Gemini's SDK reads each answer's stream twice (a tee): once for its chunks, which LangChain's client reads, and once
 * for the promise of the whole answer, which nobody reads. When the stream is cut (a cancelled run, a shutdown, a
 * dropped connection) that promise rejects unheard, and an unhandled rejection ended the whole process. The reader of
 * the chunks still gets the error; the promise's copy of it is dropped here.
 */
function settleWholeAnswers(chat: ChatGoogleGenerativeAI): ChatGoogleGenerativeAI {
  const client = (chat as unknown as { client?: { generateContentStream?: GeminiStream } }).client;
  const stream = client?.generateContentStream?.bind(client);
  if (!client || !stream)
    throw new Error('@langchain/google-genai no longer streams through client.generateContentStream');
  client.generateContentStream = async (...args) => {
    const result = await stream(...args);
    result.response.catch(() => undefined);
    return result;
  };
  return chat;
}

export const CLOUD_PROVIDERS: Record<CloudId, CloudProvider> = {
  cloud_a: {
    id: 'cloud_a',
    name: 'Google Gemini (generative-AI API)',
    keyVariable: 'CLOUD_A_API_KEY',
    models: ['gemini-2.5-flash', 'gemini-2.5-pro'],
    create: (config, model) =>
      settleWholeAnswers(
        joinFunctionResponses(
          new ChatGoogleGenerativeAI({
            model,
            apiKey: config.CLOUD_A_API_KEY,
            baseUrl: config.CLOUD_A_BASE_URL,
            streaming: true,
            maxRetries: 0,
          }),
        ),
      ),
  },
  cloud_b: {
    id: 'cloud_b',
    name: 'Anthropic (Messages API)',
    keyVariable: 'CLOUD_B_API_KEY',
    models: ['claude-sonnet-4-5', 'claude-haiku-4-5'],
    create: (config, model) =>
      new ChatAnthropic({
        model,
        apiKey: config.CLOUD_B_API_KEY,
        anthropicApiUrl: config.CLOUD_B_BASE_URL,
        streaming: true,
        maxRetries: 0,
      }),
  },
  cloud_c: {
    id: 'cloud_c',
    name: 'OpenAI (Responses API)',
    keyVariable: 'CLOUD_C_API_KEY',
    models: ['gpt-5', 'gpt-5-mini', 'gpt-4.1-mini'],
    create: (config, model) =>
      new ChatOpenAI({
        model,
        apiKey: config.CLOUD_C_API_KEY,
        useResponsesApi: true,
        streaming: true,
        maxRetries: 0,
        configuration: config.CLOUD_C_BASE_URL ? { baseURL: config.CLOUD_C_BASE_URL } : undefined,
      }),
  },
};

/** A cloud provider's models are enabled only when its key variable is set. */
export function cloudModel(config: Config, provider: CloudId, model: string): BaseChatModel {
  const spec = CLOUD_PROVIDERS[provider];
  if (!config[spec.keyVariable]) {
    throw new ProviderNotConfiguredError(`${provider} models need ${spec.keyVariable}, which is not set`);
  }
  return spec.create(config, model);
}

/** Refuses a run whose cloud provider is disabled, naming the variable to set. */
export function assertModelConfigured(config: Config, model: string): void {
  const { provider } = parseModel(model);
  if (provider === 'local') return;
  const spec = CLOUD_PROVIDERS[provider];
  if (!config[spec.keyVariable]) throw badRequest(`model "${model}" needs ${spec.keyVariable}, which is not set`);
}
