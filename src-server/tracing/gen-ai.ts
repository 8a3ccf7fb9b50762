import type { ProviderId } from '../contracts/models';

/**
 * The OpenTelemetry semantic conventions for generative AI that the spans follow, copied as constants: the
 * conventions are still marked as in development, and the semantic-conventions package exports them only from its
 * unstable entry point, whose names may change in any release.
 */
export const GEN_AI = {
  OPERATION_NAME: 'gen_ai.operation.name',
  PROVIDER_NAME: 'gen_ai.provider.name',
  REQUEST_MODEL: 'gen_ai.request.model',
  RESPONSE_MODEL: 'gen_ai.response.model',
  USAGE_INPUT_TOKENS: 'gen_ai.usage.input_tokens',
  USAGE_OUTPUT_TOKENS: 'gen_ai.usage.output_tokens',
  RESPONSE_FINISH_REASONS: 'gen_ai.response.finish_reasons',
  AGENT_NAME: 'gen_ai.agent.name',
  CONVERSATION_ID: 'gen_ai.conversation.id',
  TOOL_NAME: 'gen_ai.tool.name',
  TOOL_CALL_ID: 'gen_ai.tool.call.id',
  TOOL_TYPE: 'gen_ai.tool.type',
  /** Opt-in content (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT): the messages sent, and the answer. */
  INPUT_MESSAGES: 'gen_ai.input.messages',
  OUTPUT_MESSAGES: 'gen_ai.output.messages',
} as const;

/** `gen_ai.operation.name` values the service's spans use. */
export const GEN_AI_OPERATION = {
  CHAT: 'chat',
  INVOKE_AGENT: 'invoke_agent',
  EXECUTE_TOOL: 'execute_tool',
} as const;

/** The general `error.type` attribute of a span that ended in an error. */
export const ERROR_TYPE = 'error.type';

/**
 * `gen_ai.provider.name` of each provider the service calls: the conventions' well-known values where there is one
 * (`gcp.gemini`, `anthropic`, `openai`), and `ollama` for the local runtime, whose protocol the service speaks.
 */
export const PROVIDER_NAMES: Record<ProviderId, string> = {
  local: 'ollama',
  cloud_a: 'gcp.gemini',
  cloud_b: 'anthropic',
  cloud_c: 'openai',
};

/** The service's own attributes, under its own prefix as the conventions ask. */
export const SVC = {
  RUN_ID: 'svc.run.id',
  /** The version of its agent a run runs (a stored agent's number, a built-in's content hash). */
  AGENT_VERSION: 'svc.agent.version',
  RUN_ATTEMPT: 'svc.run.attempt',
  LEG_PLAN: 'svc.leg.plan',
  LEG_OUTCOME: 'svc.leg.outcome',
  PHASE: 'svc.phase.id',
  PHASE_VISIT: 'svc.phase.visit',
  PHASE_STATUS: 'svc.phase.status',
  QUEUE_WAIT_MS: 'svc.model.queue_wait_ms',
  TOOL_POLICY: 'svc.tool.policy',
  STOP_KIND: 'svc.stop.kind',
  STOP_NODE: 'svc.stop.node',
  DECISION: 'svc.stop.decision',
  PROJECT_ID: 'svc.project.id',
  WEBHOOK_EVENT: 'svc.webhook.event',
  WEBHOOK_ATTEMPT: 'svc.webhook.attempt',
} as const;
