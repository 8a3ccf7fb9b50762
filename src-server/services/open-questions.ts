import { stopId } from '../contracts/stops';
import type { OpenToolQuestion, QuestionNotice, ToolQuestion } from '../contracts/tool-questions';
import type { ShownQuestion, WaitingQuestion } from '../db/tool-questions.repository';

/** A waiting question as the inbox and the run's detail show it: the server's request, its page by host. */
export function toolQuestionOf(q: WaitingQuestion): ToolQuestion {
  return {
    server: q.server,
    tool: q.tool,
    call_id: q.call_id,
    mode: q.mode,
    message: q.question,
    requested_schema: q.requested_schema,
    url: q.url,
    url_host: q.url === null ? null : new URL(q.url).host,
  };
}

/** A waiting question in its run's detail: where it is answered, and until when. */
export function openQuestionOf(q: WaitingQuestion): OpenToolQuestion {
  return {
    ...toolQuestionOf(q),
    stop_id: stopId(q.run_id, q.wait_seq),
    node: q.node,
    asked_at: q.asked_at,
    expires_at: q.expires_at,
  };
}

/** A question as Slack's message and a mail show it. */
export function questionNotice(q: ShownQuestion): QuestionNotice {
  return {
    agent: q.agent,
    project: q.project_name,
    tool: q.tool,
    server: q.server,
    message: q.message,
    mode: q.mode,
    fields: questionFields(q.requested_schema),
    urlHost: q.url === null ? null : new URL(q.url).host,
    expiresAt: q.expires_at,
  };
}

/** A question's form fields as people read them, in its schema's order: "Release name (required)". */
function questionFields(schema: Record<string, unknown> | null): string[] {
  const properties = (schema?.properties ?? {}) as Record<string, { title?: unknown }>;
  const required = new Set(Array.isArray(schema?.required) ? (schema.required as unknown[]) : []);
  return Object.entries(properties).map(([name, field]) => {
    const label = typeof field?.title === 'string' && field.title.trim() ? field.title.trim() : name;
    return required.has(name) ? `${label} (required)` : label;
  });
}

/** Where a question Slack or a mail shows stands: waiting, answered (and by whom), or closed without an answer. */
export function questionStatus(
  q: ShownQuestion,
): { kind: 'waiting' } | { kind: 'answered'; action: string; by: string | null } | { kind: 'closed'; how: string } {
  if (q.waiting) return { kind: 'waiting' };
  if (q.state === 'accept' || q.state === 'decline' || q.state === 'cancel') {
    return { kind: 'answered', action: q.state, by: q.answered_by };
  }
  if (q.state === 'expired' || (q.state === 'asked' && Date.parse(q.expires_at) <= Date.now())) {
    return { kind: 'closed', how: 'Expired: nobody answered in time' };
  }
  return { kind: 'closed', how: 'Withdrawn: the server stopped asking, or the call was cut off' };
}
