import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './ports';

export interface Nginx {
  /** Where clients reach the processes through nginx. */
  url: string;
  /**
   * Puts these processes behind nginx instead of the ones it had, as a team does in a rolling upgrade: the
   * configuration rewritten and nginx told to reload it (SIGHUP). Resolves once new connections go to the new
   * configuration; connections already open (a stream) stay with the process they reached until either side ends them.
   */
  reload(upstreamUrls: string[]): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Debian's nginx in front of server processes as a team runs it: round robin, no stickiness, no buffering, and the
 * connections and open files that hundreds of streams need (each stream holds one to the client and one upstream).
 */
export async function startNginx(upstreamUrls: string[]): Promise<Nginx> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-nginx-'));
  const port = await freePort();
  const conf = path.join(dir, 'nginx.conf');
  let generation = 0;
  const writeConfig = (urls: string[]) =>
    fs.writeFile(
      conf,
      nginxConfig(
        dir,
        port,
        urls.map((u) => new URL(u).host),
        generation,
      ),
    );
  await writeConfig(upstreamUrls);
  const child: ChildProcess = spawn('nginx', ['-c', conf, '-p', dir, '-g', 'daemon off;'], { stdio: 'inherit' });
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGQUIT');
      await exited;
    }
    await fs.rm(dir, { recursive: true, force: true });
  };
  const reload = async (urls: string[]) => {
    if (urls.length === 0) throw new Error('nginx needs at least one upstream');
    generation++;
    await writeConfig(urls);
    child.kill('SIGHUP');
    // A new connection each time (no keep-alive): one kept open to a worker of the old configuration would say so.
    const deadline = Date.now() + 10_000;
    while ((await configGeneration(port)) !== generation) {
      if (child.exitCode !== null) throw new Error(`nginx exited while reloading:\n${await errorLog(dir)}`);
      if (Date.now() > deadline) throw new Error(`nginx did not load its new configuration:\n${await errorLog(dir)}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  for (let i = 0; ; i++) {
    const healthy = await fetch(`${url}/health`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (healthy) return { url, reload, stop };
    if (i > 100 || child.exitCode !== null) {
      await stop();
      throw new Error('nginx did not start');
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The generation of the configuration that answers a new connection (`/__nginx/generation`), or undefined. */
function configGeneration(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/__nginx/generation', agent: false }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve(res.statusCode === 200 ? Number(body) : undefined));
      res.on('error', () => resolve(undefined));
    });
    req.on('error', () => resolve(undefined));
  });
}

const errorLog = (dir: string) => fs.readFile(path.join(dir, 'error.log'), 'utf8').catch(() => '');

function nginxConfig(dir: string, port: number, upstreams: string[], generation: number): string {
  return `
worker_processes 1;
worker_rlimit_nofile 8192;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path ${dir}/body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream service {
${upstreams.map((u) => `    server ${u} max_fails=0;`).join('\n')}
    keepalive 64;
  }
  server {
    listen 127.0.0.1:${port} backlog=4096;
    # Which configuration answered: reload() waits for its own.
    location = /__nginx/generation {
      default_type text/plain;
      return 200 '${generation}';
    }
    location / {
      proxy_pass http://service;
      proxy_http_version 1.1;
      proxy_set_header Connection '';
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      # Streams must reach the client as they are written, and stay open between events.
      proxy_buffering off;
      proxy_read_timeout 1h;
      # A dead process: try the next one (POST too: a refused connection never reached a server).
      proxy_next_upstream error timeout non_idempotent;
    }
  }
}
`;
}
