import { clientNameOf, type ConsentView } from '../../auth/mcp-oauth.service';
import { escapeHtml } from '../../mail/stop-mail';
import { inlineHash } from '../security-headers';

const STYLE = `body{font-family:system-ui,sans-serif;max-width:560px;margin:48px auto;padding:0 16px;color:#0f172a}
.client{font-size:1.25em;font-weight:600}
.note{background:#fef9c3;padding:12px;border-radius:6px}
ul{padding-left:1.2em}
button{font:inherit;padding:8px 16px;margin-right:8px;border-radius:6px;border:1px solid #334155;background:#fff;cursor:pointer}
button.primary{background:#1d4ed8;color:#fff;border-color:#1d4ed8}`;

/**
 * The consent page's headers: its one style, forms posted to itself, and, since a browser checks a form's redirect
 * against `form-action` too, the client's redirect address (its origin, or its own scheme for a native app).
 */
export function consentPageHeaders(redirectUri?: string): Record<string, string> {
  let target = '';
  if (redirectUri) {
    const url = new URL(redirectUri);
    target = url.protocol === 'http:' || url.protocol === 'https:' ? ` ${url.origin}` : ` ${url.protocol}`;
  }
  return {
    'content-security-policy':
      `default-src 'none'; style-src ${inlineHash(STYLE)}; form-action 'self'${target}; frame-ancestors 'none'; ` +
      `base-uri 'none'; object-src 'none'`,
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
    'cache-control': 'no-store',
  };
}

/** Where the client sends the person back to: a web address's host, or a native app's scheme. */
function returnsTo(redirectUri: string): string {
  const url = new URL(redirectUri);
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.host : `the app that opens ${url.protocol} links`;
}

/**
 * The page that asks the signed-in person whether an MCP client may act as her: the client by the name it gave, and
 * whether that name is vouched for (a metadata document served from the client's own https address) or only claimed
 * (a dynamic registration, which anyone can make); where she goes back to; what it may do. Every text is escaped.
 */
export function consentPage(view: ConsentView, person: string): string {
  const { client, request } = view;
  const name = clientNameOf(client);
  const origin = client.verified
    ? `<p>Its details come from <strong>${escapeHtml(new URL(client.client_id).host)}</strong>.</p>`
    : `<p class="note">This name was given by the client itself when it registered: the service cannot vouch for it. ` +
      `Allow only a client you just started signing in from.</p>`;
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<meta name="referrer" content="no-referrer"><title>Allow ${escapeHtml(name)}?</title><style>${STYLE}</style></head>
<body><main><h1>Allow an MCP client to act as you?</h1>
<p class="client">${escapeHtml(name)}</p>
${origin}
<p>You are signed in as ${escapeHtml(person)}. If you allow it, this client may, through the service's MCP server:</p>
<ul><li>list the agents you may run, and run them as you;</li>
<li>read your runs and approvals, and decide the approvals your role lets you decide.</li></ul>
<p>It acts with your roles as they are at each request. You can revoke it at any time in the studio's Settings.</p>
<p>After you answer, you go back to ${escapeHtml(returnsTo(request.redirect_uri))}.</p>
<form method="post">
<input type="hidden" name="request" value="${escapeHtml(request.id)}">
<p><button class="primary" type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button></p>
</form>
</main></body></html>`;
}

/** A page that says why there is nothing to allow (the request expired, was answered, or is another browser's). */
export function consentGonePage(): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Sign-in expired</title><style>${STYLE}</style></head>
<body><main><h1>Nothing to allow here</h1>
<p>This sign-in request has expired, was already answered, or was started in another browser. Start again from your MCP
client.</p></main></body></html>`;
}
