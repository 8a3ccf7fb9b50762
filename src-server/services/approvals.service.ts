import { atLeast, type Access } from '../auth/access';
import type { Principal } from '../auth/principal';
import { DEFAULT_GATE_POLICY, type GatePolicy } from '../contracts/gate-policy';
import { badRequest, conflict, notFound, ServiceError } from '../contracts/errors';
import { importedThreadConflict } from '../contracts/thread-transfer';
import { parseStopId, stopId, stopOf } from '../contracts/stops';
import type { DecisionVia } from '../contracts/slack';
import type { CatalogEntry } from '../assets/catalog';
import {
  runAccepted,
  type ApprovalItem,
  type GateDecisionRecord,
  type PendingGate,
  type Thread,
  type RunAccepted,
  type ToolGrant,
} from '../contracts/runs';
import type { GateDecisionsRepository, LastDecision } from '../db/gate-decisions.repository';
import type { RunsRepository } from '../db/runs.repository';
import type { ToolGrantsRepository } from '../db/tool-grants.repository';
import type { StopDeliveriesRepository } from '../db/stop-deliveries.repository';
import type { ToolQuestionsRepository, WaitingQuestion } from '../db/tool-questions.repository';
import { toolQuestionOf } from './open-questions';
import { type AnswerQuestionBody, type QuestionAnswered } from '../contracts/tool-questions';
import { phaseBeforeGate, type Engine, type PersonDecision } from '../engine';
import { argumentProblems } from '../contracts/tool-arguments';
import { canonicalArguments } from '../tools/canonical-arguments';
import { getLogger } from '../log';
import type { AgentDirectory } from './agent-directory';
import type { AuditLog } from '../auth/audit-log';
import type { ThreadsService } from './threads.service';

const log = getLogger('svc.api');

/** How much of a gate's content the inbox shows to tell gates apart. */
const EXCERPT_CHARS = 240;
const excerptOf = (text: string) =>
  text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS - 1).trimEnd()}…` : text;

export interface ApprovalsServiceDeps {
  agents: Pick<AgentDirectory, 'forProject' | 'pinnedEntry'>;
  access: Access;
  threads: ThreadsService;
  runs: RunsRepository;
  gates: GateDecisionsRepository;
  grants: ToolGrantsRepository;
  /** Where waiting stops were sent (Slack), and how that went. */
  notices: Pick<StopDeliveriesRepository, 'noticesOf'>;
  /** Tool servers' questions (docs/approvals.md#questions-from-tool-servers). */
  questions: Pick<ToolQuestionsRepository, 'waiting' | 'find' | 'take'>;
  engine: Engine;
  audit: AuditLog;
}

/** What the audit log keeps of a tool grant. */
const keptGrant = (g: ToolGrant) => ({
  id: g.id,
  thread_id: g.thread_id,
  tool: g.tool,
  call_id: g.call_id,
  granted_by: g.granted_by,
  granted_at: g.granted_at,
});

/** `: approved by Ann at 2026-…`: who came first, so that a script can tell whether its own decision landed. */
function decidedEarlier(last: LastDecision | undefined): string {
  if (!last) return '';
  const verb = {
    approve: 'approved',
    edit: 'approved with edits',
    respond: 'sent back',
    reject: 'rejected',
    expire: 'expired',
  };
  return last.decision === 'expire'
    ? `: it expired at ${last.at}`
    : `: ${verb[last.decision]} by ${last.by} at ${last.at}`;
}

/**
 * Which stop a decision is for, as each door names it: the thread and its gate or its tool call (the routes of
 * /threads), or the stop's id (/stops, the inbox, Slack, mail); with the round its person read (contracts/stops.ts).
 */
export type StopRef = ({ thread: string; gate: string } | { thread: string; toolCall: string } | { stop: string }) & {
  round?: number | null;
};

/**
 * A person's decision at a stop, whatever door it came through: each door parses its own input into this, and
 * decide() is the only way any of them decides. `edits` is for a gate, `arguments` and `allowForThread` for a tool
 * call.
 */
export type Decision = (
  | {
      decision: 'approve';
      reason: string | null;
      edits?: Record<string, string>;
      arguments?: Record<string, unknown>;
      allowForThread?: boolean;
    }
  | { decision: 'reject'; reason: string | null }
  | { decision: 'respond'; reason: string | null; response: string }
) & {
  /** The door, when the record should name it (Slack). */
  via?: DecisionVia;
};

/**
 * Decisions at approval gates (docs/approvals.md): approve, edit, respond and reject, by people holding the gate's
 * role on the run's project, counted until the gate has its approvals; the record of every decision; and the inbox of
 * gates waiting for the caller. Whether a decision settles the gate, and expiry, are the run engine's
 * (engine/gates.ts).
 */
export function approvalsService(deps: ApprovalsServiceDeps) {
  const { access, agents, runs, gates, engine } = deps;

  /** The gate's options as the run stopped there with them (copied into its pending gate). */
  function policyOf(gate: PendingGate): GatePolicy {
    return {
      decide_role: gate.decide_role ?? DEFAULT_GATE_POLICY.decide_role,
      approvals: gate.approvals_needed ?? DEFAULT_GATE_POLICY.approvals,
      expiry: gate.on_expiry ?? DEFAULT_GATE_POLICY.expiry,
    };
  }

  type WaitingRun = Awaited<ReturnType<RunsRepository['waitingInThread']>>;
  interface StopAt {
    pending: PendingGate;
    /** How the errors name it: `gate "review"`, `tool call "<id>"`. */
    what: string;
    /** A gate's graph, at the waiting run's version (a respond needs the phase before it). */
    entry: CatalogEntry | null;
  }

  /**
   * The gate the thread's run waits at, by its node: 404 when the graph has no such gate, 409 when it waits elsewhere.
   */
  async function gateAt(thread: Thread, run: WaitingRun, gate: string): Promise<StopAt> {
    // The waiting run's own version decides which gates there are: versions published since may have others.
    const entry = run?.manifest_hash
      ? await agents.pinnedEntry(run.manifest_hash)
      : (await agents.forProject(thread.project_id, thread.agent))?.entry;
    if (!entry) throw notFound(`no agent or command named "${thread.agent}" is loaded to resume thread ${thread.id}`);
    // A name that is no gate of the thread's graph is not found; a real gate that is not waiting is a conflict.
    if (!entry.layout.nodes.some((node) => node.id === gate && node.kind === 'gate')) {
      throw notFound(`gate "${gate}" not found: "${thread.agent}" has no gate of that name`);
    }
    if (!run || !run.pending_gate) {
      throw conflict(
        `gate "${gate}" is not pending on thread ${thread.id}${decidedEarlier(await gates.latestAt(thread.id, gate))}`,
      );
    }
    if (run.pending_gate.node !== gate) {
      throw conflict(
        `gate "${gate}" is not pending on thread ${thread.id}; the pending gate is "${run.pending_gate.node}"`,
      );
    }
    return { pending: run.pending_gate, what: `gate "${gate}"`, entry };
  }

  /** The tool call the thread's run waits at, by its id: 404 when no such call waits or was decided there. */
  async function toolCallAt(thread: Thread, run: WaitingRun, callId: string): Promise<StopAt> {
    const call = run?.pending_gate?.tool_call;
    if (!run || !call || call.call_id !== callId) {
      const last = await gates.latestForCall(thread.id, callId);
      if (!last) throw notFound(`no tool call "${callId}" waits on thread ${thread.id}`);
      throw conflict(`tool call "${callId}" is not pending on thread ${thread.id}${decidedEarlier(last)}`);
    }
    return { pending: run.pending_gate!, what: `tool call "${callId}"`, entry: null };
  }

  /** The thread of stop `id`, if the caller may see it: another tenant's reads as a stop that does not exist. */
  function threadOfStop(principal: Principal, threadId: string, id: string): Promise<Thread> {
    return deps.threads.visible(principal, threadId, 'viewer').catch((error: unknown) => {
      throw error instanceof ServiceError && error.status === 404 ? notFound(`no stop "${id}"`) : error;
    });
  }

  /** A stop named by its id, as its thread and what it waits at; another tenant's is not found. */
  async function stopNamed(
    principal: Principal,
    id: string,
  ): Promise<{ thread: string; gate: string } | { thread: string; toolCall: string }> {
    const parsed = parseStopId(id);
    const run = parsed ? await runs.detail(parsed.runId) : undefined;
    if (!parsed || !run) throw notFound(`no stop "${id}"`);
    const thread = await threadOfStop(principal, run.thread_id, id);
    if (run.status !== 'waiting_approval' || !run.pending_gate || run.event_seq !== parsed.waitSeq) {
      if (await deps.questions.find(run.id, parsed.waitSeq)) {
        throw badRequest(`stop "${id}" is a tool server's question: answer it at POST /stops/${id}/answer`);
      }
      const last = await gates.latestAtStop(run.id, parsed.waitSeq);
      throw conflict(`stop "${id}" is not pending on thread ${thread.id}${decidedEarlier(last)}`);
    }
    const call = run.pending_gate.tool_call;
    return call ? { thread: thread.id, toolCall: call.call_id } : { thread: thread.id, gate: run.pending_gate.node };
  }

  return {
    /**
     * Decides a stop: approve it (with edits of the gated text, or edited arguments checked against the tool's input
     * schema), send it back (respond), or reject it; by people holding the stop's role on the run's project, counted
     * until it has its approvals, and only at the round its person read.
     */
    async decide(principal: Principal, ref: StopRef, request: Decision): Promise<RunAccepted> {
      const named = 'stop' in ref ? await stopNamed(principal, ref.stop) : ref;
      const thread = await deps.threads.visible(principal, named.thread, 'viewer');
      if (thread.imported) throw importedThreadConflict(thread.id);
      const run = await runs.waitingInThread(thread.id);
      const at =
        'gate' in named ? await gateAt(thread, run, named.gate) : await toolCallAt(thread, run, named.toolCall);
      const { pending, what } = at;
      if ('stop' in ref && stopId(run!.id, run!.event_seq) !== ref.stop) {
        throw conflict(`stop "${ref.stop}" is not pending on thread ${thread.id}: the run stopped again since`);
      }
      const policy = policyOf(pending);
      // Below the stop's role: 403, and nothing about it changes.
      await access.requireProjectRole(principal, thread.project_id, policy.decide_role, `thread ${thread.id}`);

      const call = pending.tool_call;
      let edits: Record<string, string> | null = null;
      let routeTo: string | null = null;
      let approved = call ? { canonical: call.canonical_arguments, sha256: call.arguments_sha256 } : null;
      let kind: PersonDecision['kind'] = request.decision;
      const grant = request.decision === 'approve' && request.allowForThread === true;
      if (request.decision === 'approve') {
        if (call && request.edits) throw badRequest(`invalid request body: edits: ${what} takes arguments, not edits`);
        if (!call && (request.arguments || request.allowForThread !== undefined)) {
          throw badRequest(`invalid request body: arguments: ${what} takes edits of the text it shows`);
        }
      }
      if (call && grant && policy.approvals > 1) {
        throw badRequest(
          `${call.tool} needs ${policy.approvals} people to approve each call: one person cannot allow it for the thread`,
        );
      }
      if (call && request.decision === 'approve' && request.arguments) {
        const problems = argumentProblems(call.input_schema, request.arguments);
        if (problems.length) {
          throw badRequest(
            `invalid request body: arguments do not fit the input schema of ${call.tool}: ${problems[0]}`,
            {
              fields: problems.map((message) => ({ field: 'arguments', message })),
            },
          );
        }
        const edited = canonicalArguments(request.arguments);
        if (edited.sha256 !== call.arguments_sha256) {
          approved = edited;
          kind = 'edit';
        }
      }
      if (!call && request.decision === 'approve' && request.edits && Object.keys(request.edits).length) {
        const shown = Object.keys(pending.context);
        const unknown = Object.keys(request.edits).filter((node) => !shown.includes(node));
        if (unknown.length) {
          throw badRequest(
            `invalid request body: edits: ${what} shows ${shown.map((n) => `"${n}"`).join(', ') || 'nothing'}; ` +
              `${unknown.map((n) => `"${n}"`).join(', ')} cannot be edited here`,
            { fields: unknown.map((node) => ({ field: `edits.${node}`, message: 'not shown by this gate' })) },
          );
        }
        edits = request.edits;
        kind = 'edit';
      }
      if (!call && request.decision === 'respond') {
        routeTo = phaseBeforeGate(at.entry!.layout.edges, pending.node) ?? null;
        if (!routeTo || at.entry!.layout.nodes.find((n) => n.id === routeTo)?.kind !== 'llm') {
          throw badRequest(`${what} has no phase before it to send the run back to; approve or reject it`);
        }
      }
      if (!(await engine.hasPendingInterrupt(thread.id))) {
        throw conflict(`run ${run!.id} cannot be resumed: its graph checkpoint is gone; rerun it as a new thread`);
      }

      const result = await engine.decide({
        runId: run!.id,
        gate: pending.node,
        waitSeq: run!.event_seq,
        round: ref.round ?? null,
        decision: {
          kind,
          by: { id: principal.id, name: principal.name },
          role: await access.scopeRole(principal, 'project', thread.project_id),
          reason: request.reason,
          edits,
          response: request.decision === 'respond' ? request.response : null,
          routeTo,
          toolCall:
            call && approved
              ? {
                  id: call.call_id,
                  arguments: approved.canonical,
                  sha256: approved.sha256,
                  rerunAfter: call.interrupted ? call.attempts : null,
                }
              : null,
          via: request.via ?? null,
        },
        approvalsNeeded: policy.approvals,
      });
      const decidedThere = () =>
        call ? gates.latestForCall(thread.id, call.call_id) : gates.latestAt(thread.id, pending.node);
      if (result.outcome === 'stale') {
        throw conflict(`${what} on thread ${thread.id} was already decided${decidedEarlier(await decidedThere())}`);
      }
      if (result.outcome === 'changed') {
        throw conflict(
          `${what} on thread ${thread.id} changed since you read it${decidedEarlier(await decidedThere())}; ` +
            `it is at round ${result.round} now: read it again and decide that round`,
        );
      }
      if (result.outcome === 'duplicate') {
        throw conflict(
          `you have already approved ${what} on thread ${thread.id}: ` +
            `it needs ${policy.approvals} different people to approve it`,
        );
      }
      if (grant) {
        const made = await deps.grants.grant(thread.id, call!.tool, call!.call_id, {
          id: principal.id,
          name: principal.name,
        });
        // One held already for the thread's tool is answered as it was: only a new one is a change.
        if (made.call_id === call!.call_id && made.granted_by.id === principal.id) {
          await deps.audit.record(principal, {
            action: 'tool_grant.created',
            projectId: thread.project_id,
            target: `tool grant ${made.id}: ${made.tool} on thread ${thread.id}`,
            before: null,
            after: keptGrant(made),
          });
        }
      }
      const progress =
        result.outcome === 'waiting' ? ` (${result.approvals.given} of ${result.approvals.needed} approvals)` : '';
      log.info(
        call
          ? `tool call ${call.tool} ${kind}${grant ? ' (allowed for the thread)' : ''}${progress} ` +
              `call=${call.call_id} thread=${thread.id} run=${run!.id} user=${principal.name}`
          : `gate ${pending.node} ${kind}${progress} thread=${thread.id} run=${run!.id} user=${principal.name}`,
      );
      const status = result.outcome === 'waiting' ? 'waiting_approval' : 'running';
      return {
        ...runAccepted({ runId: run!.id, threadId: thread.id }, status, run!.event_seq),
        ...(result.outcome === 'waiting' || policy.approvals > 1 ? { approvals: result.approvals } : {}),
      };
    },

    /**
     * Whether the caller could decide what the thread's run waits at now (a gate or a tool call): her role on the
     * project reaches the one it asks for, and she has not approved it already. A question is put to her only then.
     */
    async mayDecide(principal: Principal, threadId: string): Promise<boolean> {
      const thread = await deps.threads.visible(principal, threadId, 'viewer');
      if (thread.imported) return false;
      const run = await runs.waitingInThread(thread.id);
      if (!run?.pending_gate) return false;
      const policy = policyOf(run.pending_gate);
      if (!atLeast(await access.scopeRole(principal, 'project', thread.project_id), policy.decide_role)) return false;
      const approvals = await gates.approvalsOf(run.id, run.event_seq, policy.approvals);
      return !approvals.by.some((approver) => approver.id === principal.id);
    },

    /** The tools allowed for the rest of the thread, and the grants revoked since, oldest first. */
    async toolGrants(principal: Principal, threadId: string): Promise<ToolGrant[]> {
      const thread = await deps.threads.visible(principal, threadId, 'viewer');
      return deps.grants.list(thread.id);
    },

    /** Revokes a grant: the tool's next calls on the thread ask again. A member of the thread's project may. */
    async revokeToolGrant(principal: Principal, threadId: string, grantId: string): Promise<ToolGrant> {
      const thread = await deps.threads.visible(principal, threadId, 'viewer');
      await access.requireProjectRole(principal, thread.project_id, 'member', `thread ${thread.id}`);
      const revoked = await deps.grants.revoke(thread.id, grantId, principal.name);
      if (!revoked) throw notFound(`no grant ${grantId} holds on thread ${thread.id}`);
      log.info(`tool grant ${revoked.tool} revoked thread=${thread.id} user=${principal.name}`);
      await deps.audit.record(principal, {
        action: 'tool_grant.revoked',
        projectId: thread.project_id,
        target: `tool grant ${revoked.id}: ${revoked.tool} on thread ${thread.id}`,
        before: keptGrant(revoked),
        after: null,
      });
      return revoked;
    },

    /** Every decision taken at the thread's gates, oldest first. */
    async threadDecisions(principal: Principal, threadId: string): Promise<GateDecisionRecord[]> {
      const thread = await deps.threads.visible(principal, threadId, 'viewer');
      return gates.listByThread(thread.id);
    },

    /**
     * The gates waiting for the caller to decide, oldest first: in every project where her role reaches the gate's,
     * and not those she has already approved (her part there is done).
     */
    async inbox(principal: Principal): Promise<ApprovalItem[]> {
      const roles = await access.projectRoles(principal);
      if (roles && roles.size === 0) return [];
      const waiting = await gates.waiting(roles ? [...roles.keys()] : null);
      const notices = await deps.notices.noticesOf(waiting.map((g) => ({ runId: g.run_id, waitSeq: g.wait_seq })));
      const items: ApprovalItem[] = [];
      for (const gate of waiting) {
        const policy = policyOf(gate.pending_gate);
        const role = roles ? (roles.get(gate.project_id) ?? null) : 'admin';
        if (!atLeast(role, policy.decide_role)) continue;
        if (gate.approvals.some((a) => a.id === principal.id)) continue;
        const content = Object.values(gate.pending_gate.context).join('\n\n').trim();
        items.push({
          run_id: gate.run_id,
          thread_id: gate.thread_id,
          agent: gate.agent,
          project: { id: gate.project_id, name: gate.project_name },
          message: gate.message,
          stop: stopOf(gate.run_id, gate.wait_seq, gate.round, gate.pending_gate),
          sent_to: notices.get(stopId(gate.run_id, gate.wait_seq)) ?? [],
          gate: gate.pending_gate.node,
          question: gate.pending_gate.question,
          excerpt: excerptOf(content),
          context: gate.pending_gate.context,
          required_context: gate.pending_gate.required_context,
          waiting_since: gate.waiting_since,
          expires_at: gate.expires_at,
          on_expiry: policy.expiry,
          decide_role: policy.decide_role,
          approvals: { needed: policy.approvals, given: gate.approvals.length, by: gate.approvals },
          ...(gate.pending_gate.tool_call ? { tool_call: gate.pending_gate.tool_call } : {}),
        });
      }
      const asked = await deps.questions.waiting(roles ? [...roles.keys()] : null);
      for (const question of asked) {
        const role = roles ? (roles.get(question.project_id) ?? null) : 'admin';
        if (atLeast(role, QUESTION_ROLE)) items.push(questionItem(question));
      }
      return items;
    },

    /**
     * Answers a tool server's question (POST /stops/{id}/answer): accept with the fields it asked for (checked against
     * its schema), decline, or cancel; by a member of the run's project or higher, exactly once, on whichever process.
     * The process holding the call reads the answer from the question's row and hands it to the server.
     */
    async answerQuestion(principal: Principal, id: string, body: AnswerQuestionBody): Promise<QuestionAnswered> {
      const parsed = parseStopId(id);
      const question = parsed ? await deps.questions.find(parsed.runId, parsed.waitSeq) : undefined;
      if (!parsed || !question) throw notFound(`no stop "${id}"`);
      await threadOfStop(principal, question.thread_id, id);
      await access.requireProjectRole(principal, question.project_id, QUESTION_ROLE);
      if (question.state !== 'asked' || question.expired || question.orphaned) {
        const how =
          question.state === 'withdrawn' || (question.state === 'asked' && question.orphaned)
            ? 'withdrawn'
            : question.state === 'asked'
              ? 'expired'
              : 'answered';
        throw conflict(`stop "${id}" is not pending: the question was ${how}`);
      }
      let content: Record<string, unknown> | null = null;
      if (body.action === 'accept' && question.mode === 'form') {
        content = body.content ?? {};
        const problems = argumentProblems(question.requested_schema ?? { type: 'object' }, content);
        if (problems.length) throw badRequest(`the answer does not fit the question's fields: ${problems.join('; ')}`);
      } else if (body.content !== undefined) {
        throw badRequest(`content goes only with accept, for a question in form mode`);
      }
      if (
        !(await deps.questions.take(question.run_id, question.wait_seq, {
          action: body.action,
          content,
          by: principal.id,
        }))
      ) {
        throw conflict(`stop "${id}" is not pending: the question was answered, withdrawn or expired just now`);
      }
      log.info(`question ${id} answered ${body.action} by ${principal.name}`);
      return { stop_id: id, run_id: question.run_id, action: body.action };
    },
  };
}

/** Who may answer a tool server's question: anyone who may run the agent that asked. */
export const QUESTION_ROLE = 'member' as const;

/** A tool server's question as the inbox lists it, beside the gates and tool calls. */
function questionItem(q: WaitingQuestion): ApprovalItem {
  return {
    run_id: q.run_id,
    thread_id: q.thread_id,
    agent: q.agent,
    project: { id: q.project_id, name: q.project_name },
    message: q.message,
    stop: { kind: 'question', id: stopId(q.run_id, q.wait_seq), round: 1, node: q.node, tool_call: null },
    sent_to: [],
    gate: q.node,
    question: q.question,
    excerpt: excerptOf(q.question),
    context: {},
    required_context: [],
    waiting_since: q.asked_at,
    expires_at: q.expires_at,
    on_expiry: null,
    decide_role: QUESTION_ROLE,
    approvals: { needed: 1, given: 0, by: [] },
    tool_question: toolQuestionOf(q),
  };
}

export type ApprovalsService = ReturnType<typeof approvalsService>;
