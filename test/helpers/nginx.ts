import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './ports';

export interface Nginx {
  /** Where clients reach the processes through nginx. */
  url: string;
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
  await fs.writeFile(
    conf,
    nginxConfig(
      dir,
      port,
      upstreamUrls.map((u) => new URL(u).host),
    ),
  );
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
  for (let i = 0; ; i++) {
    const healthy = await fetch(`${url}/health`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (healthy) return { url, stop };
    if (i > 100 || child.exitCode !== null) {
      await stop();
      throw new Error('nginx did not start');
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function nginxConfig(dir: string, port: number, upstreams: string[]): string {
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
