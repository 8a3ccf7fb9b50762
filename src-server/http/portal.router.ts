import express, { type Router } from 'express';
import type { Catalog } from '../assets/catalog';
import { DEFAULT_PROJECT_ID } from '../contracts/tenancy';
import { inlineHash, pagePolicy } from './security-headers';

const escape = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** What the examples run: an agent with an approval gate when there is one, so both examples fit together. */
interface Example {
  agent: string;
  gate: string;
}

function example(catalog: Pick<Catalog, 'list' | 'get'>): Example {
  const agents = catalog.list('agent');
  for (const agent of agents) {
    const gate = catalog.get(agent.name)?.layout.nodes.find((n) => n.kind === 'gate');
    if (gate) return { agent: agent.name, gate: gate.id };
  }
  return { agent: agents[0]?.name ?? 'change-review', gate: 'gate' };
}

/** The page's one stylesheet and one script, inline: its content policy allows exactly these two by their hashes. */
const STYLE = `
  :root { --accent: #4f46e5; --line: #e3e6ea; --muted: #59636e; }
  body {
    font-family: system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif;
    max-width: 880px;
    margin: 40px auto;
    padding: 0 20px;
    color: #1f2328;
    line-height: 1.55;
    background: #f6f7f9;
  }
  h1 { margin-bottom: 4px; } h2 { margin-top: 32px; font-size: 18px; } .lead { color: var(--muted); margin-top: 0; }
  .links a {
    display: inline-block;
    margin: 0 10px 8px 0;
    padding: 8px 14px;
    border-radius: 8px;
    background: var(--accent);
    color: #fff;
    text-decoration: none;
  }
  .links a.secondary { background: #eef2ff; color: var(--accent); }
  .example { position: relative; }
  pre {
    background: #fff;
    border: 1px solid var(--line);
    border-radius: 8px;
    padding: 12px 14px;
    overflow: auto;
    font-size: 13px;
    margin: 0;
  }
  .copy {
    position: absolute;
    top: 8px;
    right: 8px;
    font: inherit;
    font-size: 12px;
    padding: 3px 10px;
    border: 1px solid var(--line);
    border-radius: 6px;
    background: #f6f7f9;
    cursor: pointer;
  }
  .copy:focus-visible, a:focus-visible { outline: 2px solid var(--accent); outline-offset: 2px; }
  code { font-size: 13px; }
`;

const SCRIPT = `
  for (const block of document.querySelectorAll('.example')) {
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'copy';
    button.textContent = 'Copy';
    button.addEventListener('click', async () => {
      await navigator.clipboard.writeText(block.querySelector('pre').textContent);
      button.textContent = 'Copied';
      setTimeout(() => (button.textContent = 'Copy'), 1500);
    });
    block.append(button);
  }
`;

const policy = pagePolicy({ defaultSrc: ["'none'"], styleSrc: [inlineHash(STYLE)], scriptSrc: [inlineHash(SCRIPT)] });

function page(base: string, { agent, gate }: Example, authEnabled: boolean): string {
  const b = escape(base);
  const a = escape(encodeURIComponent(agent));
  const g = escape(encodeURIComponent(gate));
  const token = authEnabled
    ? `<p>Every call carries a bearer token: the one in the studio link the server printed at start
  (<code>…/ui#token=…</code>), <code>SVC_API_TOKEN</code>, or a session from signing in to the studio.</p>`
    : `<p>Authentication is off on this server: any token (or none) is accepted.</p>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Agent workflow service</title>
<style>${STYLE}</style>
</head>
<body>
<h1>Agent workflow service</h1>
<p class="lead">Runs agents and commands as stateful graphs (intake, analysis, approval gate, output),
  streams every token as server-sent events, and stops at approval gates until a person approves or rejects.
  Threads, runs and paused graphs are kept in PostgreSQL.</p>
<p class="links"><a href="/ui">Open the studio</a><a class="secondary" href="/docs">API docs</a><a
  class="secondary" href="/openapi.json">OpenAPI 3.1</a></p>

<h2>Set up your shell</h2>
${token}
<div class="example"><pre>export BASE=${b}
export TOKEN='paste-your-token-here'</pre></div>

<h2>Run an agent and read its stream</h2>
<div class="example"><pre data-example="run">curl -N -X POST "$BASE/graphs/${a}/run" \\
  -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json" \\
  -d '{"message": "Review: rename the config loader"}'</pre></div>
<p>Each event is an <code>event:</code>, <code>id:</code> and JSON <code>data:</code> line. The stream starts
  with <code>run_start</code> (carrying <code>run_id</code> and <code>thread_id</code>), then
  <code>node_enter</code>, <code>token</code> and <code>node_exit</code>; at the approval gate it ends with
  <code>gate_waiting</code>.</p>

<h2>From a script: start a run as JSON</h2>
<div class="example"><pre data-example="start">curl -X POST "$BASE/agents/${a}/runs" \\
  -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json" \\
  -H "Idempotency-Key: rename-review-1" \\
  -d '{"message": "Review: rename the config loader"}'</pre></div>
<p>The answer comes at once, as JSON: the run's <code>run_id</code>, <code>thread_id</code>, and the
  <code>stream_url</code> to follow it (<code>curl -N "$BASE$STREAM_URL"</code>). This is the call for a script and
  for a generated client (<code>startRun</code>), which sets no <code>Accept</code> header: the stream above is for
  reading at once. The <code>Idempotency-Key</code> is yours, one per request (a UUID is best): sent again with it
  (a lost answer, a cut connection), the request
  answers the same run instead of starting a second; decisions and cancels take one too.</p>

<h2>Approve the gate and follow the resumed run</h2>
<div class="example"><pre data-example="approve">curl -X POST "$BASE/threads/$THREAD_ID/gates/${g}/approve" \\
  -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json" \\
  -d '{"reason": "looks good"}'</pre></div>
<p>Use the <code>thread_id</code> from <code>run_start</code> (or from the JSON start). The body may be left out. The
  answer is JSON whose <code>stream_url</code> is the resumed run, from the gate on; follow it:</p>
<div class="example"><pre data-example="follow">curl -N "$BASE$STREAM_URL" -H "Authorization: Bearer $TOKEN"</pre></div>
<p>To stop the run instead, call <code>…/gates/${g}/reject</code> the same way.</p>

<h2>Edit, respond, and what waits for you</h2>
<div class="example"><pre data-example="edit">curl -X POST "$BASE/threads/$THREAD_ID/gates/${g}/approve" \\
  -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json" \\
  -d '{"reason": "softer tone", "edits": {"analysis": "Low risk; one nit."}}'</pre></div>
<p>An approval with <code>edits</code> replaces the output of a phase the gate shows: the next phases read your
  text. To send the run back instead, the phase before the gate runs again with your feedback:</p>
<div class="example"><pre data-example="respond">curl -X POST "$BASE/threads/$THREAD_ID/gates/${g}/respond" \\
  -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json" \\
  -d '{"response": "Check the migration too."}'</pre></div>
<div class="example"><pre data-example="inbox">curl "$BASE/approvals" -H "Authorization: Bearer $TOKEN"
curl "$BASE/threads/$THREAD_ID/decisions" -H "Authorization: Bearer $TOKEN"</pre></div>
<p>The first lists the gates waiting for you across your projects, oldest first; the second, who decided what at a
  thread's gates. A gate may need a role, several approvers, or expire: see the <a href="/docs">API docs</a>.</p>

<h2>Decide a tool call</h2>
<p>An agent acts through tools; a call its policy asks about stops the run with <code>tool_waiting</code>, whose
  <code>tool_call.call_id</code> names it (it is in the inbox too). Approve it as it is, or with your own arguments:</p>
<div class="example"><pre data-example="tool-call">curl -X POST "$BASE/threads/$THREAD_ID/tool-calls/$CALL_ID/approve" \\
  -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json" \\
  -d '{"reason": "shorter", "arguments": {"path": "NOTES.md", "content": "Reviewed."}}'</pre></div>
<p>The call runs with exactly those arguments (they must fit the tool's input schema), and the record keeps their
  SHA-256. <code>…/reject</code> with a <code>reason</code> tells the model why instead; <code>…/respond</code> with a
  <code>response</code> answers in the tool's place; <code>"allow_for_thread": true</code> lets the tool's later calls
  on the thread through. See <a href="/docs">the API docs</a>.</p>

<h2>Re-attach to a run</h2>
<div class="example"><pre data-example="attach">curl -N "$BASE/runs/$RUN_ID/stream" -H "Authorization: Bearer $TOKEN" -H "Last-Event-ID: 0"</pre></div>
<p>A client that disconnects never stops a run; <code>POST /runs/{id}/cancel</code> does.</p>

<h2>Be told when a gate waits: a webhook</h2>
<div class="example"><pre data-example="webhook">curl -X POST "$BASE/webhooks" \\
  -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json" \\
  -d '{"url": "https://hooks.example.com/agents", "events": ["gate.waiting", "run.completed"],
       "project_id": "${DEFAULT_PROJECT_ID}"}'</pre></div>
<p>Needs the admin role on the project (that id is the default project's; <code>GET /projects</code> lists yours), or
  give <code>org_id</code> for every project of an organisation. Events: <code>gate.waiting</code>,
  <code>gate.decided</code>, <code>gate.expired</code>, <code>run.completed</code>, <code>run.failed</code>. The answer
  shows the webhook's <code>secret</code> once: each delivery is signed with it as Standard Webhooks say
  (<code>webhook-id</code>, <code>webhook-timestamp</code>, <code>webhook-signature</code>), for its
  <code>standardwebhooks</code> libraries to verify. <code>GET /webhooks/{id}/deliveries</code> shows every attempt.
  Addresses on the server's own network are refused unless <code>WEBHOOK_ALLOW_PRIVATE_URLS=true</code>.</p>

<h2 id="mcp">Use it from an MCP client</h2>
<p>The service is also an MCP server, at <code>${b}/mcp</code> (streamable HTTP). Add it to an assistant that speaks
  MCP (an IDE's or a chat app's) with an entry such as this one:</p>
<div class="example"><pre data-example="mcp">{
  "mcpServers": {
    "agent-workflow": {
      "type": "http",
      "url": "${b}/mcp"${authEnabled ? ',\n      "headers": { "Authorization": "Bearer paste-your-token-here" }' : ''}
    }
  }
}</pre></div>
<p>Its tools list the agents, run one and return its output, read runs, list the approvals waiting for you and
  decide them, and cancel a run. Where a run stops for a person, a client that can ask you (elicitation) shows the
  question inside the call and the run goes on with your answer; any other client gets the run's ids and the
  question, to decide later. ${authEnabled ? "Give it a personal access token from the studio's Settings: it lasts until you revoke it. On a server that signs people in with an identity provider, a client that supports MCP's OAuth sign-in needs no header: it opens the sign-in in your browser and asks you to allow it. " : ''}<code>/mcp</code> is
  not in the OpenAPI document: it speaks the MCP protocol, whose <code>tools/list</code> describes each tool.</p>

<h2>Generate a typed client</h2>
<div class="example"><pre data-example="client">npx openapi-typescript "$BASE/openapi.json" -o api.d.ts</pre></div>
<p>Types for every operation, request and answer of <a href="/openapi.json">the OpenAPI document</a>, for use
  with <code>openapi-fetch</code>; <code>npx @hey-api/openapi-ts -i "$BASE/openapi.json" -o client</code> makes a
  whole client instead, one function per <code>operationId</code> (<code>startRun</code>,
  <code>approveGate</code>, <code>listThreads</code>, …). Start runs with <code>startRun</code>, which answers
  JSON, and follow them with <code>streamRun</code>. Every error is typed: each operation lists the ones it can
  answer, with the error envelope.</p>

<script>${SCRIPT}</script>
</body>
</html>`;
}

/** GET /: what the service is, where the studio and the docs are, and curl examples with the browser's address. */
export function portalRouter(catalog: Pick<Catalog, 'list' | 'get'>, authEnabled: boolean): Router {
  const router = express.Router();
  router.get('/', policy, (req, res) => {
    res.setHeader('Cache-Control', 'no-cache');
    res.type('html').send(page(`${req.protocol}://${req.get('host') ?? 'localhost'}`, example(catalog), authEnabled));
  });
  return router;
}
