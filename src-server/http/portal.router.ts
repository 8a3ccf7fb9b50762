import express, { type Router } from 'express';

const escape = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function page(base: string, example: string): string {
  const b = escape(base);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Agent workflow service</title>
<style>
  body { font-family: system-ui, sans-serif; max-width: 860px; margin: 40px auto; padding: 0 20px; color: #1f2328; line-height: 1.55; }
  h1 { margin-bottom: 4px; } .lead { color: #6a737d; margin-top: 0; }
  .links a { display: inline-block; margin-right: 12px; padding: 8px 14px; border-radius: 8px; background: #4f46e5; color: #fff; text-decoration: none; }
  .links a.secondary { background: #eef2ff; color: #4f46e5; }
  pre { background: #f6f8fa; border: 1px solid #e3e6ea; border-radius: 8px; padding: 12px; overflow: auto; font-size: 13px; }
</style>
</head>
<body>
<h1>Agent workflow service</h1>
<p class="lead">Runs agents and commands as LangGraph graphs, streams every token as server-sent events, and stops at approval gates until a person decides.</p>
<p class="links"><a href="/ui">Open the studio</a><a class="secondary" href="/docs">API docs</a><a class="secondary" href="/openapi.json">OpenAPI 3.1</a></p>
<h2>Run an agent and read its stream</h2>
<pre>curl -N -X POST ${b}/graphs/${escape(example)}/run \\
  -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json" \\
  -d '{"message": "Review: rename the config loader"}'</pre>
<p>The stream starts with <code>run_start</code> (carrying <code>run_id</code> and <code>thread_id</code>), then <code>node_enter</code>, <code>token</code> and <code>node_exit</code> events; at an approval gate it ends with <code>gate_waiting</code>.</p>
<h2>Approve a gate and follow the resumed run</h2>
<pre>curl -N -X POST ${b}/threads/$THREAD_ID/gates/gate/approve \\
  -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json" \\
  -H "Accept: text/event-stream" -d '{"reason": "looks good"}'</pre>
<h2>Re-attach to a run</h2>
<pre>curl -N ${b}/runs/$RUN_ID/stream -H "Authorization: Bearer $TOKEN" -H "Last-Event-ID: 0"</pre>
<p>The token is the one in the studio link the server printed at start (<code>…/ui#token=…</code>), or <code>SVC_API_TOKEN</code>.</p>
</body>
</html>`;
}

/** GET /: what the service is, where the studio and the docs are, and curl examples with the real address. */
export function portalRouter(exampleAgent: () => string): Router {
  const router = express.Router();
  router.get('/', (req, res) => {
    res.type('html').send(page(`${req.protocol}://${req.get('host') ?? 'localhost'}`, exampleAgent()));
  });
  return router;
}
