import { stopId } from '../contracts/stops';
import type { OpenToolQuestion, ToolQuestion } from '../contracts/tool-questions';
import type { WaitingQuestion } from '../db/tool-questions.repository';

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
