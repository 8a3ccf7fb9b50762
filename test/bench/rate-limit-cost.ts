/**
 * What request limits cost a request that is under them (docs/operations.md#rate-limits): the same API request with
 * a token, on a server that counts it (a limit far above the load) and on one that does not, in the same sitting.
 */
import { createDatabase } from '../helpers/postgres';
import type { ServerProcess } from '../helpers/process';
import { median, percentile, type BenchRow } from './bench-table';

const REQUESTS = 4000;
const CLIENTS = 8;
const TOKEN = 'bench-rate-limit-token-0123456789';

/** Requests a second, and each request's time, with CLIENTS requests in flight at once. */
async function load(server: ServerProcess): Promise<{ rps: number; times: number[] }> {
  const times: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next++ < REQUESTS) {
        const began = performance.now();
        const res = await server.request('/threads?limit=1', { headers: { authorization: `Bearer ${TOKEN}` } });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`GET /threads answered ${res.status}`);
        times.push(performance.now() - began);
      }
    }),
  );
  return { rps: REQUESTS / ((performance.now() - started) / 1000), times };
}

export async function rateLimitCostRow(
  databaseServer: string,
  spawn: (env: Record<string, string>) => Promise<ServerProcess>,
  env: Record<string, string>,
): Promise<BenchRow> {
  const db = await createDatabase(databaseServer, 'svc_bench');
  const base = { ...env, DATABASE_URL: db.url, AUTH_ENABLED: 'true', SVC_API_TOKEN: TOKEN };
  try {
    const results: Record<'on' | 'off', { rps: number; times: number[] }[]> = { on: [], off: [] };
    // Alternating, three rounds each, so that neither side has the quieter moments.
    for (let round = 0; round < 3; round++) {
      for (const side of ['off', 'on'] as const) {
        const server = await spawn({ ...base, RATE_LIMIT_PER_MINUTE: side === 'on' ? '100000000' : '0' });
        try {
          await load(server); // warm-up
          results[side].push(await load(server));
        } finally {
          await server.stop();
        }
      }
    }
    const rps = (side: 'on' | 'off') => median(results[side].map((r) => r.rps));
    const p95 = (side: 'on' | 'off') =>
      percentile(
        results[side].flatMap((r) => r.times),
        95,
      );
    const ratio = rps('on') / rps('off');
    return {
      benchmark: `Request limits on, not reached: GET /threads with a token, ${CLIENTS} clients (req/s, p95)`,
      service: `${rps('on').toFixed(0)} req/s, p95 ${p95('on').toFixed(1)} ms`,
      baseline: `${rps('off').toFixed(0)} req/s, p95 ${p95('off').toFixed(1)} ms (limits off)`,
      ratio: `${(ratio * 100).toFixed(0)}%`,
      target: '≥ 95% of the throughput without limits',
      met: ratio >= 0.95 ? 'yes' : 'no',
    };
  } finally {
    await db.drop();
  }
}
