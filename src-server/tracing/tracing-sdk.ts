import { errorMessage } from '../contracts/errors';
import { getLogger } from '../log';

const log = getLogger('svc.api');

/** The OpenTelemetry variables that name where traces go: one of them set means someone asked for traces. */
const EXPORT_VARIABLES = ['OTEL_TRACES_EXPORTER', 'OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'];

/**
 * Whether to start the OpenTelemetry SDK: only when an exporter or an endpoint is named and OTEL_SDK_DISABLED is not
 * true. A started SDK exports to localhost by default, so an instance nobody pointed anywhere starts none, and its
 * spans cost what the API's no-op tracer costs.
 */
export function tracingWanted(env: NodeJS.ProcessEnv): boolean {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return false;
  if ((env.OTEL_TRACES_EXPORTER ?? '').trim().toLowerCase() === 'none') return false;
  return EXPORT_VARIABLES.some((name) => (env[name] ?? '').trim() !== '');
}

/**
 * The values of the exporter's headers (`OTEL_EXPORTER_OTLP_HEADERS`: `key=value,…`, values URL-encoded), which
 * often carry a collector's key: kept out of the logs as every secret is.
 */
export function otlpHeaderSecrets(env: NodeJS.ProcessEnv): string[] {
  return [env.OTEL_EXPORTER_OTLP_HEADERS, env.OTEL_EXPORTER_OTLP_TRACES_HEADERS].flatMap((list) =>
    (list ?? '').split(',').flatMap((pair) => {
      const value = pair.slice(pair.indexOf('=') + 1).trim();
      if (!pair.includes('=') || !value) return [];
      try {
        return [value, decodeURIComponent(value)];
      } catch {
        return [value];
      }
    }),
  );
}

export interface Tracing {
  /** Sends the spans still buffered and stops. */
  shutdown(): Promise<void>;
}

/**
 * Starts the OpenTelemetry SDK for traces, configured by its own `OTEL_*` variables (exporter, endpoint, protocol,
 * headers, sampler, service name and resource, batch sizes), when they ask for it; resolves to undefined otherwise.
 * Traces only: the service's metrics are Prometheus's (`/metrics`) and its logs its own, so neither a metric reader
 * nor a log processor is made. No instrumentation is installed: the spans are the service's own
 * (tracing/run-trace.ts), which holds inside Electron as in a plain process. The SDK is loaded only then.
 */
export async function startTracing(env: NodeJS.ProcessEnv, version: string): Promise<Tracing | undefined> {
  if (!tracingWanted(env)) return undefined;
  try {
    const { NodeSDK, resources } = await import('@opentelemetry/sdk-node');
    const sdk = new NodeSDK({
      serviceName: env.OTEL_SERVICE_NAME?.trim() || 'agent-workflow-service',
      resource: resources.resourceFromAttributes({ 'service.version': version }),
      instrumentations: [],
      metricReaders: [],
      logRecordProcessors: [],
    });
    sdk.start();
    log.info(`tracing: OpenTelemetry spans are exported (${describeExport(env)})`);
    return {
      shutdown: () =>
        sdk.shutdown().catch((error) => log.warn(`tracing: the last spans could not be sent: ${errorMessage(error)}`)),
    };
  } catch (error) {
    // A server without traces is better than no server: the variables are someone's wish, not its purpose.
    log.warn(`tracing: the OpenTelemetry SDK could not start, so no spans are exported: ${errorMessage(error)}`);
    return undefined;
  }
}

/** Where spans go, for the start line: the exporter and the endpoint's origin (never its path, query or headers). */
function describeExport(env: NodeJS.ProcessEnv): string {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  let origin = 'the default endpoint';
  if (endpoint) {
    try {
      origin = new URL(endpoint).origin;
    } catch {
      origin = 'an endpoint that is not a URL';
    }
  }
  const exporter = env.OTEL_TRACES_EXPORTER?.trim() || 'otlp';
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf';
  return exporter === 'otlp' ? `otlp, ${protocol}, to ${origin}` : exporter;
}
