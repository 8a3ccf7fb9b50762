import type { Mail } from './smtp';

/** A stop as one mail shows it: what is asked, the gated text or the call, and the links of its person. */
export interface StopMailState {
  agent: string;
  project: string;
  question: string;
  node: string;
  context: Record<string, string>;
  toolCall: { tool: string; arguments: string } | null;
  expiresAt: string | null;
  studioUrl: string;
  /** This person's decision link; null when the address is nobody's here (the mail only tells). */
  decisionUrl: string | null;
}

/** HTML's five: model output is text in a mail, never markup or links. */
export const escapeHtml = (text: string) =>
  text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');

const pretty = (canonical: string) => {
  try {
    return JSON.stringify(JSON.parse(canonical), null, 2);
  } catch {
    return canonical;
  }
};

/** What a stop's mail shows as text, the same in its plain and its HTML part. */
function shown(state: StopMailState): { title: string; blocks: { label: string; text: string }[] } {
  const title = state.toolCall
    ? `${state.agent} asks to run ${state.toolCall.tool} in ${state.project}`
    : `${state.agent} waits at ${state.node} in ${state.project}`;
  const blocks = state.toolCall
    ? [{ label: 'Arguments', text: pretty(state.toolCall.arguments) }]
    : Object.entries(state.context).map(([node, text]) => ({ label: node, text }));
  return { title, blocks };
}

export function stopMail(to: string, state: StopMailState): Mail {
  const { title, blocks } = shown(state);
  const expiry = state.expiresAt ? `It expires at ${state.expiresAt}.` : '';
  const decide = state.decisionUrl
    ? `Decide (this link is yours alone, works once and asks you to confirm):\n${state.decisionUrl}`
    : 'No person of the service has this address, so this mail cannot decide: open the studio.';
  const text = [
    title,
    '',
    state.question,
    '',
    ...blocks.flatMap((b) => [`${b.label}:`, b.text, '']),
    expiry,
    decide,
    '',
    `In the studio: ${state.studioUrl}`,
  ].join('\n');
  const html = `<!doctype html><html><body style="font-family: sans-serif">
<p>${escapeHtml(title)}</p>
<h2 style="font-size: 16px">${escapeHtml(state.question)}</h2>
${blocks.map((b) => `<p><strong>${escapeHtml(b.label)}</strong></p><pre style="white-space: pre-wrap">${escapeHtml(b.text)}</pre>`).join('\n')}
${expiry ? `<p>${escapeHtml(expiry)}</p>` : ''}
${
  state.decisionUrl
    ? `<p><a href="${escapeHtml(state.decisionUrl)}">Decide</a> (this link is yours alone, works once and asks you to confirm)</p>`
    : '<p>No person of the service has this address, so this mail cannot decide: open the studio.</p>'
}
<p><a href="${escapeHtml(state.studioUrl)}">Open in the studio</a></p>
</body></html>`;
  const subject = `Approval needed: ${state.question}`.replace(/[\r\n]+/g, ' ').slice(0, 200);
  return { to, subject, text, html };
}
