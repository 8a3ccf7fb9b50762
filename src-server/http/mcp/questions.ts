import { randomUUID } from 'node:crypto';
import type { JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import type { RunDetail } from '../../contracts/runs';
import { getLogger } from '../../log';
import { questionFor } from './elicitation-form';
import type { McpRequestContext, McpServices } from './mcp-call';
import { atLeast, ELICITATION_SINCE, FORM_MODE_SINCE } from './protocol-versions';

const log = getLogger('svc.api');

/** A question put to the caller at a run's stop: its row is written; the request is to be sent. */
export interface AskedQuestion {
  id: string;
  request: JSONRPCRequest;
}

/**
 * The question for the caller at the stop the run waits at (docs/mcp.md#approval-inside-the-call), with its row written
 * so that the answer is taken on whichever process it reaches; or why she cannot be asked here. `meta` goes into the
 * request's `_meta` (a task's question names its task).
 */
export async function askAtStop(
  services: McpServices,
  context: McpRequestContext,
  run: RunDetail,
  meta?: Record<string, unknown>,
): Promise<AskedQuestion | string> {
  const { principal, session } = context;
  const gate = run.pending_gate!;
  if (!atLeast(session.protocol_version, ELICITATION_SINCE)) {
    return `this MCP client speaks protocol ${session.protocol_version}, which has no questions (elicitation came with ${ELICITATION_SINCE}): decide with decide_approval or in the studio`;
  }
  if (!session.elicitation) {
    return 'this MCP client cannot be asked questions (it did not declare elicitation): decide with decide_approval or in the studio';
  }
  if (!(await services.approvals.mayDecide(principal, run.thread_id))) {
    return `you cannot decide it here: it needs the ${gate.decide_role ?? 'member'} role on the project${(gate.approvals_needed ?? 1) > 1 ? ' and approvals from other people' : ''}`;
  }
  const question = questionFor(run.agent, gate, session.protocol_version);
  const id = `elicit-${randomUUID()}`;
  await services.sessions.ask(
    {
      id,
      session_id: session.id,
      run_id: run.id,
      thread_id: run.thread_id,
      gate: gate.node,
      call_id: gate.tool_call?.call_id ?? null,
      context_node: question.contextNode,
      stop_id: run.stop?.id ?? null,
      round: run.stop?.round ?? null,
    },
    services.elicitationTimeoutS,
  );
  log.info(
    `asked ${principal.name} at ${gate.tool_call ? gate.tool_call.tool : gate.node} run=${run.id} question=${id}`,
  );
  const params = {
    ...(atLeast(session.protocol_version, FORM_MODE_SINCE) ? { mode: 'form' } : {}),
    message: question.message,
    requestedSchema: question.requestedSchema,
  };
  return {
    id,
    request: { jsonrpc: '2.0', id, method: 'elicitation/create', params: meta ? { ...params, _meta: meta } : params },
  };
}
