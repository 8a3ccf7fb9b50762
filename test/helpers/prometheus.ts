import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './ports';

export interface Prometheus {
  url: string;
  /** A PromQL instant query through the HTTP API (`/api/v1/query`): its vector's samples. */
  query(promql: string): Promise<{ metric: Record<string, string>; value: number }[]>;
  stop(): Promise<void>;
}

/**
 * Debian's Prometheus server (`apt-get install prometheus`) scraping one target every second, as an operator would
 * configure it: its own configuration file and data folder in a temporary folder, the bearer token from the scrape
 * configuration's `authorization`, and its web API on a free loopback port.
 */
export async function startPrometheus(target: { url: string; token: string; job: string }): Promise<Prometheus> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-prometheus-'));
  const port = await freePort();
  const config = path.join(dir, 'prometheus.yml');
  await fs.writeFile(
    config,
    [
      'global:',
      '  scrape_interval: 1s',
      '  scrape_timeout: 1s',
      'scrape_configs:',
      `  - job_name: ${target.job}`,
      '    metrics_path: /metrics',
      '    authorization:',
      `      credentials: ${JSON.stringify(target.token)}`,
      '    static_configs:',
      `      - targets: [${JSON.stringify(new URL(target.url).host)}]`,
      '',
    ].join('\n'),
  );
  let output = '';
  const child: ChildProcess = spawn(
    'prometheus',
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const started = new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', (error) =>
      reject(new Error(`cannot start prometheus (apt-get install prometheus): ${error.message}`)),
    );
  });
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    await fs.rm(dir, { recursive: true, force: true });
  };
  const query = async (promql: string) => {
    const res = await fetch(`${url}/api/v1/query?${new URLSearchParams({ query: promql })}`);
    const body = (await res.json()) as {
      status: string;
      error?: string;
      data: { result: { metric: Record<string, string>; value: [number, string] }[] };
    };
    if (body.status !== 'success') throw new Error(`prometheus refused ${promql}: ${body.error}`);
    return body.data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
  };
  try {
    await started;
    for (let i = 0; ; i++) {
      const ready = await fetch(`${url}/-/ready`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ready) return { url, query, stop };
      if (i > 200 || child.exitCode !== null) throw new Error(`prometheus did not start:\n${output.slice(-2000)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } catch (error) {
    await stop();
    throw error;
  }
}
