import type { DecisionKind } from '../../mcp-schemas';
import { decideArguments, editedPhase, outcomeOf, type Answer, type DecideArguments } from './decision';
import { el } from './dom';
import type { Phase, Stop, ToolResult } from './stops';

/** What a card needs of the page: the server's tools through the host, and how the host writes a time. */
export interface CardHost {
  /** decide_approval; a call the host could not make is an error result. */
  decide(args: DecideArguments): Promise<ToolResult>;
  /** A run's phases (get_run): list_approvals' items carry none, and an edit of a gate starts from one. */
  phasesOf(runId: string): Promise<Phase[]>;
  /** Opens a link through the host; absent where the host opens none. */
  openLink?: (url: string) => void;
  time(iso: string): string;
}

type Asked = Exclude<DecisionKind, 'approve'>;

const DECISIONS: { kind: DecisionKind; label: string }[] = [
  { kind: 'approve', label: 'Approve' },
  { kind: 'edit', label: 'Edit' },
  { kind: 'respond', label: 'Respond' },
  { kind: 'reject', label: 'Reject' },
];

/** The form of each decision that asks for text: its title, its field and its button, at a gate and a tool call. */
const FORMS: Record<
  Asked,
  { title: string; field: { gate: string; tool: string }; submit: { gate: string; tool: string } }
> = {
  edit: {
    title: 'Edit, then approve',
    field: { gate: 'New text', tool: 'Arguments (JSON)' },
    submit: { gate: 'Approve with this text', tool: 'Run with these arguments' },
  },
  respond: {
    title: 'Respond',
    field: {
      gate: 'Your answer, sent back to the phase before the gate',
      tool: "Your answer, given in the tool's place",
    },
    submit: { gate: 'Send back', tool: 'Answer for the tool' },
  },
  reject: {
    title: 'Reject',
    field: { gate: 'Why you reject it', tool: 'Why you reject the call' },
    submit: { gate: 'Reject with this reason', tool: 'Reject the call with this reason' },
  },
};

const fact = (term: string, value: string) => el('div', {}, el('dt', {}, term), el('dd', {}, value));
const json = (value: unknown) => JSON.stringify(value, null, 2);

/** What the person decides on: the gated text, or the tool call with its arguments and schema. */
function shownPart(stop: Stop, id: (part: string) => string): HTMLElement {
  if (stop.kind === 'gate') {
    return el(
      'section',
      { class: 'shown', 'aria-labelledby': id('shown') },
      el('h3', { id: id('shown') }, 'What you decide on'),
      // Focusable, so that a keyboard scrolls a long text.
      el('pre', { class: 'gated', tabindex: '0', 'aria-labelledby': id('shown') }, stop.content),
    );
  }
  return el(
    'section',
    { class: 'shown', 'aria-labelledby': id('shown') },
    el('h3', { id: id('shown') }, 'The tool call'),
    el('p', { class: 'tool' }, 'Tool ', el('code', {}, stop.tool ?? '')),
    el('h4', { id: id('arguments') }, 'Arguments'),
    el('pre', { class: 'gated', tabindex: '0', 'aria-labelledby': id('arguments') }, json(stop.arguments ?? {})),
    stop.inputSchema &&
      el(
        'details',
        {},
        el('summary', {}, "The tool's input schema"),
        el('pre', { class: 'schema', tabindex: '0', 'aria-label': "The tool's input schema" }, json(stop.inputSchema)),
      ),
  );
}

/**
 * The card of one stop: what waits, who may decide it, and the four decisions. Edit, Respond and Reject open a form
 * below the buttons (Escape or Cancel closes it and gives the focus back); each decision calls decide_approval, and
 * the card says what came of it, or the tool's error text, in a live region.
 */
export function renderCard(stop: Stop, n: number, host: CardHost): HTMLElement {
  const id = (part: string) => `stop-${n}-${part}`;
  const forTool = stop.kind === 'tool_call';
  const where = [stop.agent, stop.project].filter(Boolean).join(' · ');

  const facts = el(
    'dl',
    { class: 'facts' },
    fact('Who may decide', `${stop.decideRole} or a higher role`),
    stop.approvals &&
      stop.approvals.needed > 1 &&
      fact('Approvals', `${stop.approvals.given} of ${stop.approvals.needed}`),
    stop.expiresAt && fact('Expires', host.time(stop.expiresAt)),
    stop.waitingSince && fact('Waiting since', host.time(stop.waitingSince)),
  );
  const buttons = DECISIONS.map(({ kind, label }) => {
    const button = el(
      'button',
      { type: 'button', class: `decide decide-${kind}`, 'aria-describedby': id('question') },
      label,
    );
    if (kind !== 'approve') button.setAttribute('aria-expanded', 'false');
    return { kind, button };
  });
  const studio =
    host.openLink && stop.studioUrl ? el('button', { type: 'button', class: 'link' }, 'Open in the studio') : null;
  const formSlot = el('div', { class: 'form-slot' });
  const problem = el('p', { id: id('problem'), class: 'problem', role: 'alert' });
  const outcome = el('p', { class: 'outcome', role: 'status', tabindex: '-1' });
  const card = el(
    'article',
    { class: 'card', 'aria-labelledby': id('question') },
    where && el('p', { class: 'where' }, where),
    el('h2', { id: id('question') }, stop.question || 'A decision waits'),
    facts,
    shownPart(stop, id),
    el('div', { class: 'actions', role: 'group', 'aria-label': 'Decide' }, ...buttons.map((b) => b.button), studio),
    formSlot,
    problem,
    outcome,
  );

  let open: { kind: Asked; opener: HTMLButtonElement } | null = null;
  let decided = false;

  const setBusy = (busy: boolean) => {
    for (const { button } of buttons) button.disabled = busy || decided;
    const fieldset = formSlot.querySelector('fieldset');
    if (fieldset) fieldset.disabled = busy;
    card.setAttribute('aria-busy', String(busy));
  };

  const closeForm = () => {
    formSlot.replaceChildren();
    open?.opener.setAttribute('aria-expanded', 'false');
    open = null;
  };

  async function decide(kind: DecisionKind, args: DecideArguments) {
    problem.textContent = '';
    outcome.textContent = 'Deciding…';
    setBusy(true);
    const said = outcomeOf(kind, await host.decide(args));
    if (!said.ok) {
      outcome.textContent = '';
      problem.textContent = said.text;
      setBusy(false);
      return;
    }
    decided = true;
    closeForm();
    setBusy(false);
    card.classList.add('decided');
    outcome.textContent = said.text;
    outcome.focus();
  }

  /** Decides with what was filled in, or says what is missing, on the field it was missing from. */
  function submit(kind: DecisionKind, answer: Omit<Answer, 'decision'>, field?: HTMLTextAreaElement) {
    const args = decideArguments(stop, { decision: kind, ...answer });
    if (typeof args === 'string') {
      problem.textContent = args;
      field?.setAttribute('aria-invalid', 'true');
      field?.focus();
      return;
    }
    field?.removeAttribute('aria-invalid');
    void decide(kind, args);
  }

  /** The text an edit starts from, and what its field is called; null when the card cannot tell. */
  async function editStart(): Promise<{ text: string; field: string } | null> {
    if (forTool) return { text: json(stop.arguments ?? {}), field: FORMS.edit.field.tool };
    const edited = editedPhase(stop, stop.phases ?? (await host.phasesOf(stop.runId)));
    return edited && { text: edited.text, field: `${FORMS.edit.field.gate} of ${edited.node}` };
  }

  async function openForm(kind: Asked, opener: HTMLButtonElement) {
    const again = open?.kind === kind;
    closeForm();
    problem.textContent = '';
    if (again) return;
    const words = FORMS[kind];
    let start = { text: '', field: forTool ? words.field.tool : words.field.gate };
    if (kind === 'edit') {
      setBusy(true);
      const edit = await editStart().catch(() => null);
      setBusy(false);
      if (!edit) {
        problem.textContent = 'The card cannot tell which text this gate shows: decide it in the studio.';
        return;
      }
      start = edit;
    }
    const textarea = el('textarea', {
      id: id(`${kind}-text`),
      name: 'text',
      // As tall as the text it starts with, within reason; the person can make it taller.
      rows: String(Math.min(14, Math.max(4, start.text.split('\n').length + 1))),
      'aria-describedby': id('problem'),
    });
    textarea.value = start.text;
    const reason =
      kind === 'reject'
        ? null
        : el('input', { id: id(`${kind}-reason`), name: 'reason', type: 'text', autocomplete: 'off' });
    const send = el(
      'button',
      { type: 'button', class: `send decide-${kind}` },
      forTool ? words.submit.tool : words.submit.gate,
    );
    const cancel = el('button', { type: 'button' }, 'Cancel');
    // No <form>: a host's sandbox need not allow forms (`allow-forms`), and a blocked form fires no submit event.
    const fields = el(
      'fieldset',
      { class: `answer answer-${kind}` },
      el('legend', {}, words.title),
      el('label', { for: textarea.id }, start.field),
      textarea,
      reason && el('label', { for: reason.id }, 'Reason (optional)'),
      reason,
      el('div', { class: 'form-actions' }, send, cancel),
    );
    const dismiss = () => {
      closeForm();
      problem.textContent = '';
      opener.focus();
    };
    const decideNow = () => submit(kind, { text: textarea.value, reason: reason?.value ?? '' }, textarea);
    send.addEventListener('click', decideNow);
    // The keys a form would give: Enter in the one-line field and Ctrl or ⌘ with Enter anywhere decide; Escape closes.
    fields.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') {
        event.preventDefault();
        dismiss();
      } else if (event.key === 'Enter' && (event.ctrlKey || event.metaKey || event.target === reason)) {
        event.preventDefault();
        decideNow();
      }
    });
    cancel.addEventListener('click', dismiss);
    formSlot.replaceChildren(fields);
    opener.setAttribute('aria-expanded', 'true');
    open = { kind, opener };
    textarea.focus();
  }

  for (const { kind, button } of buttons) {
    button.addEventListener('click', () => {
      if (kind === 'approve') {
        closeForm();
        submit(kind, { text: '', reason: '' });
      } else {
        void openForm(kind, button);
      }
    });
  }
  studio?.addEventListener('click', () => host.openLink!(stop.studioUrl!));
  return card;
}
