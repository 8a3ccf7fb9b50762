import { context, propagation, ROOT_CONTEXT, trace, type Context, type Tracer } from '@opentelemetry/api';

/**
 * The service's tracer and the W3C trace context it stores and sends. While no SDK is started (tracing is off, see
 * tracing-sdk.ts), the API's tracer makes spans that record nothing and have no context, and its propagator writes
 * nothing: nothing is stored, nothing is sent, and each span costs an object.
 */
export const tracer = (): Tracer => trace.getTracer('agent-workflow-service');

/** The context a stored or received `traceparent` names (the empty context when there is none). */
export function contextOf(traceparent: string | null | undefined): Context {
  if (!traceparent) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, { traceparent });
}

/** The `traceparent` of a context's span, or null when it has none (tracing off). */
export function traceparentOf(ctx: Context): string | null {
  return traceHeaders(ctx).traceparent ?? null;
}

/** Headers that carry a context's span on to an HTTP call (a webhook, an MCP server): none while tracing is off. */
export function traceHeaders(ctx: Context = context.active()): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier;
}
