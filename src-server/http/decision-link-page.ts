import type { LinkView } from '../services/email.service';
import { escapeHtml } from '../mail/stop-mail';
import { inlineHash } from './security-headers';

const STYLE = `body{font-family:system-ui,sans-serif;max-width:720px;margin:32px auto;padding:0 16px;color:#0f172a}
pre{white-space:pre-wrap;background:#f1f5f9;padding:12px;border-radius:6px}
textarea{width:100%;min-height:80px;font:inherit}
button{font:inherit;padding:8px 16px;margin-right:8px;border-radius:6px;border:1px solid #334155;background:#fff;cursor:pointer}
button.primary{background:#1d4ed8;color:#fff;border-color:#1d4ed8}
.note{background:#fef9c3;padding:12px;border-radius:6px}`;

/**
 * The headers of a decision link's page: its own content policy (its one style; forms post to itself alone; nobody
 * frames it), no referrer (the token is in the address), and no copy kept by a cache.
 */
export const DECISION_PAGE_HEADERS = {
  'content-security-policy':
    `default-src 'none'; style-src ${inlineHash(STYLE)}; form-action 'self'; frame-ancestors 'none'; ` +
    `base-uri 'none'; object-src 'none'`,
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cache-control': 'no-store',
};

const TITLES: Record<LinkView['state'], string> = {
  open: 'Decide',
  unknown: 'Not a decision link',
  used: 'Already used',
  expired: 'Expired',
  ended: 'Nothing to decide',
  changed: 'Changed since the mail',
};

/**
 * A decision link's page: the stop and a form that confirms (a GET decides nothing), or why the link decides nothing;
 * after a confirmation, what happened. Every text is escaped: the gated text is model output.
 */
export function decisionLinkPage(view: LinkView, outcome?: { decided: boolean; message: string }): string {
  const stop = view.stop;
  const parts: string[] = [];
  if (outcome) parts.push(`<p class="note" role="status">${escapeHtml(outcome.message)}</p>`);
  else if (view.state !== 'open') parts.push(`<p class="note" role="status">${escapeHtml(view.message)}</p>`);
  if (stop) {
    const what = stop.toolCall
      ? `${stop.agent} asks to run ${stop.toolCall.tool} in ${stop.project}`
      : `${stop.agent} waits at ${stop.node} in ${stop.project}`;
    parts.push(`<p>${escapeHtml(what)}</p>`, `<h2>${escapeHtml(stop.question)}</h2>`);
    const blocks = stop.toolCall
      ? [['Arguments', stop.toolCall.arguments] as const]
      : Object.entries(stop.context).map(([node, text]) => [node, text] as const);
    for (const [label, text] of blocks) parts.push(`<h3>${escapeHtml(label)}</h3><pre>${escapeHtml(text)}</pre>`);
  }
  if (view.state === 'open' && !outcome?.decided) {
    parts.push(`<form method="post">
<p>You decide as ${escapeHtml(view.recipient)}.</p>
<label for="reason">Reason (needed to reject)</label>
<textarea id="reason" name="reason" maxlength="2000"></textarea>
<p><button class="primary" type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="reject">Reject</button></p>
</form>`);
  }
  if (stop?.studioUrl) parts.push(`<p><a href="${escapeHtml(stop.studioUrl)}">Open in the studio</a></p>`);
  const title = outcome ? (outcome.decided ? 'Decided' : 'Nothing was decided') : TITLES[view.state];
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<meta name="referrer" content="no-referrer"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head>
<body><main><h1>${escapeHtml(title)}</h1>
${parts.join('\n')}
</main></body></html>`;
}

/** The status a link's page answers with: 200 to decide, or why not. */
export const LINK_STATUS: Record<LinkView['state'], 200 | 404 | 409> = {
  open: 200,
  unknown: 404,
  used: 409,
  expired: 409,
  ended: 409,
  changed: 409,
};
