import type { AnswerQuestionBody, ToolQuestion, ToolQuestionState } from '@contracts/tool-questions';
import { personName } from './person-name';

/**
 * A tool server's question in words (docs/approvals.md#questions-from-tool-servers), the same in the inbox and in the
 * run: what it asks, what an answer does, and how it ended.
 */

/** "project.ask_release asks", or for a page "… asks you to open a page at accounts.example.com". */
export function questionHeading(question: Pick<ToolQuestion, 'tool' | 'mode' | 'url_host'>): string {
  return question.mode === 'url'
    ? `${question.tool} asks you to open a page at ${question.url_host ?? 'an address of its own'}`
    : `${question.tool} asks`;
}

/**
 * Whether an address may be offered as a link: only a web page's. The server refuses any other, and the studio does
 * not rely on that: a `javascript:` or `file:` link is never made of a server's text.
 */
export function isWebAddress(url: string | null | undefined): url is string {
  if (!url) return false;
  try {
    const { protocol } = new URL(url);
    return protocol === 'https:' || protocol === 'http:';
  } catch {
    return false;
  }
}

/** What became of an answer someone just sent, said to them (and to screen readers). */
export function answerOutcomeText(question: Pick<ToolQuestion, 'tool' | 'mode'>, body: AnswerQuestionBody): string {
  switch (body.action) {
    case 'accept':
      return question.mode === 'url'
        ? `Done: ${question.tool} is told the page is done, and goes on.`
        : `Sent: ${question.tool} goes on with your answer.`;
    case 'decline':
      return `Declined: ${question.tool} is told you declined, and goes on as it decides.`;
    case 'cancel':
      return `Dismissed: ${question.tool} is told nobody answers, and goes on as it decides.`;
  }
}

/** How a question in a run stands: "Waiting for an answer", "Answered: accept by Ann", "Expired: nobody answered". */
export function questionStateText(state: ToolQuestionState, by: string | null): string {
  const who = by ? ` by ${personName(by)}` : '';
  switch (state) {
    case 'asked':
      return 'Waiting for an answer';
    case 'accept':
    case 'decline':
    case 'cancel':
      return `Answered: ${state}${who}`;
    case 'expired':
      return 'Expired: nobody answered in time; the server heard it dismissed';
    case 'withdrawn':
      return 'Withdrawn: the server stopped asking, or the call was cut off, before anyone answered';
  }
}
