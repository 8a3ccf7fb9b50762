import type { QuestionNotice } from '../contracts/tool-questions';
import type { Mail } from './smtp';
import { escapeHtml } from './stop-mail';

/** A tool server's question as its mail shows it: what it asks, and where it is answered. */
export interface QuestionMailState extends QuestionNotice {
  studioUrl: string;
}

/**
 * The mail of a question a tool server asks mid-call: its text as text (never markup or links), its fields, and the
 * studio's link, where the form is. It has no decision link: an answer needs the fields, which a mail cannot take.
 */
export function questionMail(to: string, state: QuestionMailState): Mail {
  const title = `${state.agent} in ${state.project}: ${state.tool} (server ${state.server}) asks`;
  const what =
    state.mode === 'url'
      ? `It asks you to open a page at ${state.urlHost ?? 'an unknown host'}: open it from the studio.`
      : state.fields.length
        ? `It asks for: ${state.fields.join(', ')}.`
        : '';
  const text = [
    title,
    '',
    state.message,
    '',
    what,
    `It waits until ${state.expiresAt}; the run goes on once it is answered.`,
    '',
    `Answer it in the studio: ${state.studioUrl}`,
  ].join('\n');
  const html = `<!doctype html><html><body style="font-family: sans-serif">
<p>${escapeHtml(title)}</p>
<pre style="white-space: pre-wrap">${escapeHtml(state.message)}</pre>
${what ? `<p>${escapeHtml(what)}</p>` : ''}
<p>${escapeHtml(`It waits until ${state.expiresAt}; the run goes on once it is answered.`)}</p>
<p><a href="${escapeHtml(state.studioUrl)}">Answer it in the studio</a></p>
</body></html>`;
  const subject = `Question from ${state.tool}: ${state.message}`.replace(/[\r\n]+/g, ' ').slice(0, 200);
  return { to, subject, text, html };
}
