import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { build } from 'esbuild';

/**
 * A web host of MCP Apps for the browser tests, on one loopback port and two origins, as the extension asks: the
 * host's page at http://127.0.0.1:<port> (host.ts) and the sandbox proxy at http://localhost:<port> (sandbox.ts).
 * The page's MCP client reaches the service's /mcp through this server, which adds the token, as a chat host's own
 * backend holds a connector's credentials: the page of another origin could not call /mcp itself (the service
 * refuses foreign Origins), and the token stays out of it.
 */
export interface AppHost {
  /** The host's page showing the app of `tool`, called with `args`. */
  pageUrl(tool: string, args: Record<string, unknown>): string;
  /** The origins of the page and of the sandbox proxy: every request the browser makes goes to one of them. */
  origins: string[];
  close(): Promise<void>;
}

const HOST_PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>An MCP Apps host</title>
    <style>
      body { margin: 0; padding: 24px; background: #eceef2; color: #1c1c1e; font: 14px/1.5 system-ui, sans-serif; }
      .turn { margin: 0 0 10px; color: #55565c; }
      iframe { display: block; width: 760px; height: 120px; border: 1px solid #c9cad0; border-radius: 12px;
        background: #fff; }
      #calls:empty { display: none; }
    </style>
  </head>
  <body>
    <main>
      <p class="turn" id="host-state" data-state="loading">Loading…</p>
      <iframe id="app" title="Approval card (sandbox)" sandbox="allow-scripts allow-same-origin"></iframe>
      <ol id="calls" aria-label="The app's tool calls"></ol>
    </main>
    <script src="/host.js"></script>
  </body>
</html>`;

const SANDBOX_PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>Sandbox</title>
    <style>html, body, iframe { width: 100%; height: 100%; margin: 0; border: 0; display: block; }</style>
  </head>
  <body>
    <script src="/sandbox.js"></script>
  </body>
</html>`;

/** The extension's restrictive default for an app that declares no `csp`, on the proxy and so on the app's frame. */
const SANDBOX_POLICY = [
  "default-src 'none'",
  "script-src 'self' 'unsafe-inline'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "media-src 'self' data:",
  "connect-src 'none'",
  "object-src 'none'",
  "base-uri 'self'",
].join('; ');

const RELAYED = ['content-type', 'accept', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id'];
const RETURNED = ['content-type', 'mcp-session-id', 'cache-control'];

const pick = (headers: IncomingHttpHeaders, names: string[]) =>
  Object.fromEntries(names.flatMap((name) => (headers[name] === undefined ? [] : [[name, headers[name]!]])));

async function bundle(file: string): Promise<string> {
  const built = await build({
    entryPoints: [path.join(import.meta.dirname, file)],
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    target: 'es2022',
    logLevel: 'silent',
  });
  return built.outputFiles[0]!.text;
}

export async function startAppHost(serviceUrl: string, token: string): Promise<AppHost> {
  const [hostScript, sandboxScript] = await Promise.all([bundle('host.ts'), bundle('sandbox.ts')]);
  const mcp = new URL('/mcp', serviceUrl);

  function relay(req: http.IncomingMessage, res: http.ServerResponse) {
    const upstream = http.request(
      mcp,
      { method: req.method, headers: { ...pick(req.headers, RELAYED), authorization: `Bearer ${token}` } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, pick(answer.headers, RETURNED));
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  }

  const send = (res: http.ServerResponse, type: string, body: string, headers: Record<string, string> = {}) => {
    res.writeHead(200, { 'content-type': type, 'cache-control': 'no-store', ...headers });
    res.end(body);
  };

  const server = http.createServer((req, res) => {
    const { hostname, pathname } = new URL(req.url ?? '/', `http://${req.headers.host}`);
    const route = `${hostname} ${req.method} ${pathname}`;
    if (route === '127.0.0.1 GET /') return send(res, 'text/html', HOST_PAGE);
    if (route === '127.0.0.1 GET /host.js') return send(res, 'text/javascript', hostScript);
    if (hostname === '127.0.0.1' && pathname === '/mcp') return relay(req, res);
    if (route === 'localhost GET /sandbox.html') {
      return send(res, 'text/html', SANDBOX_PAGE, { 'content-security-policy': SANDBOX_POLICY });
    }
    if (route === 'localhost GET /sandbox.js') return send(res, 'text/javascript', sandboxScript);
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const [hostOrigin, sandboxOrigin] = [`http://127.0.0.1:${port}`, `http://localhost:${port}`];
  return {
    pageUrl: (tool, args) => {
      const sandbox = `${sandboxOrigin}/sandbox.html?${new URLSearchParams({ host: hostOrigin })}`;
      return `${hostOrigin}/?${new URLSearchParams({ tool, arguments: JSON.stringify(args), sandbox })}`;
    },
    origins: [hostOrigin, sandboxOrigin],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
