import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One span as OTLP/HTTP's JSON encoding carries it, flattened: ids in hex, attributes as plain values. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, unknown>;
  status: { code?: number; message?: string };
  service: string | undefined;
}

interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: AnyValue[] };
}

const valueOf = (v: AnyValue): unknown =>
  v.stringValue ??
  (v.intValue !== undefined ? Number(v.intValue) : undefined) ??
  v.doubleValue ??
  v.boolValue ??
  v.arrayValue?.values?.map(valueOf);

const attributesOf = (list: { key: string; value: AnyValue }[] | undefined) =>
  Object.fromEntries((list ?? []).map((a) => [a.key, valueOf(a.value)]));

/**
 * A local OTLP/HTTP receiver (the JSON encoding, `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`): what a collector would
 * get, kept for the test to read. It answers as a collector does (200, an empty partial success).
 */
export async function startOtlpReceiver() {
  const spans: ReceivedSpan[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces' && req.method === 'POST') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans?: {
            resource?: { attributes?: { key: string; value: AnyValue }[] };
            scopeSpans?: { spans?: Record<string, unknown>[] }[];
          }[];
        };
        for (const resource of body.resourceSpans ?? []) {
          const service = attributesOf(resource.resource?.attributes)['service.name'] as string | undefined;
          for (const scope of resource.scopeSpans ?? []) {
            for (const s of scope.spans ?? []) {
              spans.push({
                traceId: s.traceId as string,
                spanId: s.spanId as string,
                parentSpanId: (s.parentSpanId as string | undefined) || undefined,
                name: s.name as string,
                kind: s.kind as number,
                startNs: BigInt(s.startTimeUnixNano as string),
                endNs: BigInt(s.endTimeUnixNano as string),
                attributes: attributesOf(s.attributes as { key: string; value: AnyValue }[]),
                status: (s.status as ReceivedSpan['status']) ?? {},
                service,
              });
            }
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    /** The env that points a server's SDK here, exporting at once. */
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '50',
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
