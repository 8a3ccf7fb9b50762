/**
 * A stop as a Slack message (a gate, a tool call, or a tool server's question), and the modals of its buttons (Block
 * Kit). Gated text, arguments, questions and names are model output or user input: escaped as Slack asks (`&`, `<`,
 * `>`), in verbatim text (no links, mentions or channel names are made of it), and cut to Slack's limits with a
 * pointer to the studio.
 */

import type { QuestionNotice } from '../contracts/tool-questions';

/** A stop as the message shows it, read when the message is posted or updated. */
export interface StopMessageState {
  stopId: string;
  round: number;
  agent: string;
  project: string;
  question: string;
  /** The gate's name, or for a tool call the phase that made it. */
  node: string;
  /** node → the text the gate shows (a gate); empty for a tool call. */
  context: Record<string, string>;
  toolCall: { tool: string; arguments: string } | null;
  decideRole: string;
  approvals: { needed: number; by: string[] };
  expiresAt: string | null;
  /** Where it stands: waiting, or how it ended. */
  status:
    | { kind: 'waiting' }
    | { kind: 'decided'; decision: string; by: string; at: string; via: string | null; reason: string | null }
    | { kind: 'expired'; outcome: string | null; at: string }
    | { kind: 'ended'; runStatus: string };
  /** The run in the studio, where PUBLIC_URL is set. */
  studioUrl: string | null;
}

export interface SlackMessage {
  text: string;
  blocks: object[];
}

/** What a button's value carries: the stop and the round its person saw. */
export interface ButtonValue {
  stop: string;
  round: number;
}

export const ACTIONS = {
  approve: 'stop.approve',
  reject: 'stop.reject',
  edit: 'stop.edit',
  respond: 'stop.respond',
} as const;
export type StopAction = keyof typeof ACTIONS;

/** Slack's limits: a section's text, and a plain-text input's value. */
const SECTION_CHARS = 2900;
export const INPUT_CHARS = 3000;

/** Escapes text for Slack's mrkdwn: its three control characters, as https://api.slack.com/reference/surfaces/formatting says. */
export function escapeSlack(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Text in a code block, escaped, that cannot close the block early; cut at `max` characters. */
function literal(text: string, max: number): string {
  const cut = text.length > max;
  const shown = escapeSlack(cut ? text.slice(0, max) : text).replace(/```/g, '`\u200b``');
  const more = cut ? '\n_…cut here: the whole text is in the studio_' : '';
  return `\`\`\`${shown}\`\`\`${more}`;
}

const mrkdwn = (text: string) => ({ type: 'mrkdwn', text, verbatim: true });
const section = (text: string) => ({ type: 'section', text: mrkdwn(text) });
const plain = (text: string) => ({ type: 'plain_text', text: text.slice(0, 75), emoji: false });

const VERBS: Record<string, string> = {
  approve: 'Approved',
  edit: 'Approved with edits',
  respond: 'Sent back',
  reject: 'Rejected',
};

/** Whether the stop's texts fit the edit modal (Slack's input takes at most 3,000 characters). */
export function editableInSlack(state: StopMessageState): boolean {
  if (state.toolCall) return prettyArguments(state.toolCall.arguments).length <= INPUT_CHARS;
  const texts = Object.values(state.context);
  return texts.length > 0 && texts.length <= 10 && texts.every((t) => t.length <= INPUT_CHARS);
}

/** A call's arguments as people read them: indented JSON. */
export function prettyArguments(canonical: string): string {
  try {
    return JSON.stringify(JSON.parse(canonical), null, 2);
  } catch {
    return canonical;
  }
}

export function stopMessage(state: StopMessageState): SlackMessage {
  const what = state.toolCall
    ? `${escapeSlack(state.agent)} asks to run *${escapeSlack(state.toolCall.tool)}*`
    : `${escapeSlack(state.agent)} waits at *${escapeSlack(state.node)}*`;
  const blocks: object[] = [
    section(`${what} in project ${escapeSlack(state.project)}\n*${escapeSlack(state.question)}*`),
  ];
  if (state.toolCall) {
    blocks.push(section(literal(prettyArguments(state.toolCall.arguments), SECTION_CHARS)));
  } else {
    const entries = Object.entries(state.context);
    const each = Math.max(200, Math.floor(SECTION_CHARS / Math.max(1, entries.length)));
    for (const [node, text] of entries.slice(0, 10)) {
      blocks.push(section(`_${escapeSlack(node)}_\n${literal(text, each - node.length - 10)}`));
    }
  }
  const given = state.approvals.by.length;
  const facts = [
    `Decides: ${escapeSlack(state.decideRole)} or above`,
    state.approvals.needed > 1 ? `Approvals: ${given} of ${state.approvals.needed}` : null,
    state.expiresAt
      ? `Expires: <!date^${Math.floor(Date.parse(state.expiresAt) / 1000)}^{date_short_pretty} {time}|${state.expiresAt}>`
      : null,
    state.round > 1 ? `Round ${state.round} (edited since it stopped)` : null,
  ].filter(Boolean);
  if (given > 0 && state.status.kind === 'waiting')
    facts.push(`Approved by ${state.approvals.by.map(escapeSlack).join(', ')}`);
  blocks.push({ type: 'context', elements: [mrkdwn(facts.join('  ·  '))] });

  const status = state.status;
  let outcome: string;
  if (status.kind === 'waiting') {
    const value = JSON.stringify({ stop: state.stopId, round: state.round } satisfies ButtonValue);
    const button = (action: StopAction, text: string, style?: 'primary' | 'danger') => ({
      type: 'button',
      action_id: ACTIONS[action],
      text: plain(text),
      value,
      ...(style ? { style } : {}),
    });
    const buttons = [button('approve', 'Approve', 'primary')];
    if (editableInSlack(state)) buttons.push(button('edit', state.toolCall ? 'Edit arguments' : 'Edit'));
    buttons.push(button('respond', state.toolCall ? 'Answer instead' : 'Respond'));
    buttons.push(button('reject', 'Reject', 'danger'));
    blocks.push({ type: 'actions', block_id: 'stop', elements: buttons });
    outcome = 'waits for a decision';
  } else if (status.kind === 'decided') {
    const via = status.via === 'slack' ? ' via Slack' : status.via === 'email' ? ' from a mail' : '';
    const reason = status.reason ? `: ${escapeSlack(status.reason.slice(0, 500))}` : '';
    outcome = `${VERBS[status.decision] ?? status.decision} by ${escapeSlack(status.by)}${via}${reason}`;
    blocks.push(section(`*${outcome}*`));
  } else if (status.kind === 'expired') {
    outcome = `Expired${status.outcome ? ` (${status.outcome})` : ''}`;
    blocks.push(section(`*${outcome}*`));
  } else {
    outcome = `The run ${status.runStatus === 'cancelled' ? 'was cancelled' : status.runStatus.replace(/_/g, ' ')}`;
    blocks.push(section(`*${outcome}*`));
  }
  if (state.studioUrl) blocks.push({ type: 'context', elements: [mrkdwn(`<${state.studioUrl}|Open in the studio>`)] });
  const text = `${state.toolCall ? `Tool call ${state.toolCall.tool}` : `Gate ${state.node}`}: ${state.question} (${outcome})`;
  return { text: escapeSlack(text).slice(0, 3000), blocks };
}

/** What a modal carries back: the stop and round its person saw, and where its message is. */
export interface ModalMetadata {
  stop: string;
  round: number;
  channel: string | null;
}

const input = (blockId: string, label: string, initial: string | null, multiline = true, optional = false) => ({
  type: 'input',
  block_id: blockId,
  optional,
  label: plain(label),
  element: {
    type: 'plain_text_input',
    action_id: 'value',
    multiline,
    max_length: INPUT_CHARS,
    ...(initial !== null ? { initial_value: initial.slice(0, INPUT_CHARS) } : {}),
  },
});

/** The modal a button opens: Reject asks for a reason, Edit shows the text or the arguments, Respond asks for text. */
export function stopModal(
  action: Exclude<StopAction, 'approve'>,
  state: StopMessageState,
  meta: ModalMetadata,
): object {
  const titles = { reject: 'Reject', edit: 'Edit and approve', respond: state.toolCall ? 'Answer instead' : 'Respond' };
  const submits = { reject: 'Reject', edit: 'Approve', respond: 'Send' };
  let blocks: object[];
  if (action === 'reject') blocks = [input('reason', 'Why is it rejected?', null)];
  else if (action === 'respond') {
    blocks = [
      input(
        'response',
        state.toolCall ? 'The answer the model gets instead of the tool’s' : 'Feedback for the phase before the gate',
        null,
      ),
    ];
  } else if (state.toolCall) {
    blocks = [
      input('arguments', `Arguments of ${state.toolCall.tool} (JSON)`, prettyArguments(state.toolCall.arguments)),
    ];
  } else {
    blocks = Object.entries(state.context).map(([node, text]) => input(`edit:${node}`, node, text));
  }
  return {
    type: 'modal',
    callback_id: ACTIONS[action],
    private_metadata: JSON.stringify(meta),
    title: plain(titles[action]),
    submit: plain(submits[action]),
    close: plain('Cancel'),
    blocks: [section(`*${escapeSlack(state.question)}*`), ...blocks],
  };
}

/** The button that declines a tool server's question from its message (its other answers need its form). */
export const QUESTION_DECLINE = 'question.decline';

/** A tool server's question as its message shows it: what it asks, and where it stands. */
export interface QuestionMessageState extends QuestionNotice {
  stopId: string;
  status:
    { kind: 'waiting' } | { kind: 'answered'; action: string; by: string | null } | { kind: 'closed'; how: string };
  studioUrl: string | null;
}

const ANSWERS: Record<string, string> = { accept: 'Answered', decline: 'Declined', cancel: 'Dismissed' };

/**
 * A question a tool server asks in the middle of a call: the server's message as text, its fields (answered in the
 * studio, where the form is), Decline; after, how it ended. The page of a url-mode question is shown by its host only.
 */
export function questionMessage(state: QuestionMessageState): SlackMessage {
  const blocks: object[] = [
    section(
      `${escapeSlack(state.agent)} in project ${escapeSlack(state.project)}: *${escapeSlack(state.tool)}* ` +
        `(server ${escapeSlack(state.server)}) asks`,
    ),
    section(literal(state.message, SECTION_CHARS)),
  ];
  const facts = [
    state.mode === 'url'
      ? `A page at ${escapeSlack(state.urlHost ?? 'an unknown host')}: open it from the studio`
      : state.fields.length
        ? `Fields: ${state.fields.map(escapeSlack).join(', ')}`
        : null,
    `Expires: <!date^${Math.floor(Date.parse(state.expiresAt) / 1000)}^{date_short_pretty} {time}|${state.expiresAt}>`,
  ].filter(Boolean);
  blocks.push({ type: 'context', elements: [mrkdwn(facts.join('  ·  '))] });
  let outcome: string;
  const status = state.status;
  if (status.kind === 'waiting') {
    const value = JSON.stringify({ stop: state.stopId, round: 1 } satisfies ButtonValue);
    const buttons: object[] = [];
    if (state.studioUrl) {
      buttons.push({
        type: 'button',
        action_id: 'question.open',
        text: plain('Answer in the studio'),
        url: state.studioUrl,
        style: 'primary',
      });
    }
    buttons.push({ type: 'button', action_id: QUESTION_DECLINE, text: plain('Decline'), value });
    blocks.push({ type: 'actions', block_id: 'question', elements: buttons });
    outcome = 'waits for an answer';
  } else if (status.kind === 'answered') {
    outcome = `${ANSWERS[status.action] ?? status.action}${status.by ? ` by ${escapeSlack(status.by)}` : ''}`;
    blocks.push(section(`*${outcome}*`));
  } else {
    outcome = status.how;
    blocks.push(section(`*${outcome}*`));
  }
  if (state.studioUrl && status.kind !== 'waiting') {
    blocks.push({ type: 'context', elements: [mrkdwn(`<${state.studioUrl}|Open in the studio>`)] });
  }
  const text = `${state.tool} asks: ${state.message.slice(0, 200)} (${outcome})`;
  return { text: escapeSlack(text).slice(0, 3000), blocks };
}
