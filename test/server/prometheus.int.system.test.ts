import { afterAll, describe, expect, it } from 'vitest';
import { useIntegrationServer } from '../helpers/integration';
import { startPrometheus, type Prometheus } from '../helpers/prometheus';
import { readEvents } from '../helpers/sse';
import { until } from '../helpers/until';

/**
 * The scrape an operator sets up: Debian's Prometheus server reads /metrics with METRICS_TOKEN from its scrape
 * configuration, and PromQL over what it stored answers with this test's runs.
 */
const METRICS_TOKEN = 'prometheus-test-scrape-token-42';
const ctx = useIntegrationServer({ server: { AUTH_ENABLED: 'true', METRICS_TOKEN } });
let prometheus: Prometheus | undefined;
afterAll(() => prometheus?.stop());

describe("Prometheus's own server", () => {
  it('scrapes /metrics with the bearer token, and a PromQL query counts the runs', async () => {
    ctx.model.reply(['scraped ', 'by ', 'prometheus']);
    for (const message of ['first run', 'second run']) {
      const events = await readEvents(
        await ctx.server.request('/graphs/summary/run', { method: 'POST', json: { message } }),
      );
      expect(events.at(-1)!.data.type).toBe('run_done');
    }
    prometheus = await startPrometheus({ url: ctx.server.url, token: METRICS_TOKEN, job: 'agent-workflow-service' });

    const finished = await until(async () => {
      const result = await prometheus!.query(
        'sum by (agent) (svc_run_leg_duration_seconds_count{job="agent-workflow-service", outcome="completed"})',
      );
      return result.length ? result : undefined;
    }, 20_000);
    expect(finished).toEqual([{ metric: { agent: 'summary' }, value: 2 }]);

    const [up] = await prometheus.query('up{job="agent-workflow-service"}');
    expect(up!.value).toBe(1);
    const [phases] = await prometheus.query(
      'sum(svc_phase_duration_seconds_count{agent="summary", status="completed"})',
    );
    expect(phases!.value).toBe(6);
    // The cluster-wide series, one per process scraped: max, not sum, says how many runs are in progress.
    const [running] = await prometheus.query('max(svc_runs_in_progress{agent="summary", status="running"})');
    expect(running!.value).toBe(0);
    // Prometheus starts in a few seconds, and its first scrape comes within one more; a busy machine is slower.
  }, 60_000);
});
