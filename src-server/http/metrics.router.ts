import { z } from 'zod';
import { bearerIs } from '../auth/authenticator';
import { notFound, unauthorized } from '../contracts/errors';
import type { Api } from './api';
import type { AppDeps } from './deps';

/**
 * GET /metrics: Prometheus's text format, for METRICS_TOKEN alone (docs/observability.md). Not the API's token nor a
 * session: a scraper holds a read-only secret of its own, and the API's tokens open nothing here. Without
 * METRICS_TOKEN the server has no metrics: 404, whatever the request sends.
 */
export function metricsRoutes(api: Api, { config, metrics }: AppDeps): void {
  api.route({
    method: 'get',
    path: '/metrics',
    operationId: 'getMetrics',
    tag: 'service',
    summary: "This process's metrics and the cluster's, in Prometheus's text format, for METRICS_TOKEN",
    ownToken: {
      scheme: 'metricsToken',
      description: 'METRICS_TOKEN, the read-only token of GET /metrics; no other token opens it',
    },
    errors: {
      401: 'the request does not send METRICS_TOKEN as its bearer token (unauthorized)',
      404: 'METRICS_TOKEN is not set: the server serves no metrics (not_found)',
    },
    responses: {
      200: {
        description:
          "Prometheus's text exposition format 0.0.4: series of this process, and cluster-wide series read from " +
          'PostgreSQL (their help says so: every process reports the same value)',
        contentType: 'text/plain',
        schema: z.string(),
      },
    },
    handler: async ({ req, res }) => {
      const token = config.METRICS_TOKEN;
      if (!token || !metrics)
        throw notFound('no route for GET /metrics: metrics are served only when METRICS_TOKEN is set');
      if (!bearerIs(req, token))
        throw unauthorized('GET /metrics takes METRICS_TOKEN: send Authorization: Bearer <token>');
      const text = await metrics.scrape();
      res.status(200).type(metrics.contentType).send(text);
    },
  });
}
