import type { Access } from '../auth/access';
import type { Principal } from '../auth/principal';
import {
  badRequest,
  errorMessage,
  notFound,
  ServiceError,
  serviceUnavailable,
  unauthorized,
} from '../contracts/errors';
import type { PendingGate } from '../contracts/runs';
import type { ConnectSlackBody, SlackConnection, SlackLink } from '../contracts/slack';
import { parseStopId, studioThreadUrl } from '../contracts/stops';
import type { GateDecisionsRepository } from '../db/gate-decisions.repository';
import type { ShownQuestion, ToolQuestionsRepository } from '../db/tool-questions.repository';
import type { SlackConnectionRow, SlackRepository } from '../db/slack.repository';
import type { ClaimedStopDelivery, StopDeliveriesRepository, StopRunRow } from '../db/stop-deliveries.repository';
import { getLogger } from '../log';
import type { SecretBox } from '../secrets/secret-box';
import { slackSignatureProblem } from '../slack/slack-signature';
import { SlackRefusedError, SlackUnavailableError, type SlackWebApi } from '../slack/slack-web-api';
import {
  ACTIONS,
  QUESTION_DECLINE,
  questionMessage,
  stopMessage,
  stopModal,
  type SlackMessage,
  type ButtonValue,
  type ModalMetadata,
  type StopAction,
  type StopMessageState,
} from '../slack/stop-message';
import type { ApprovalsService, Decision } from './approvals.service';
import type { AuditLog } from '../auth/audit-log';
import { questionNotice, questionStatus } from './open-questions';

const log = getLogger('svc.slack');

/** How many of an organisation's latest deliveries its connection shows. */
const DELIVERIES_SHOWN = 20;

export interface SlackServiceDeps {
  access: Access;
  slack: SlackRepository;
  deliveries: StopDeliveriesRepository;
  gates: Pick<GateDecisionsRepository, 'listAtStop' | 'approvalsOf' | 'roundOf' | 'approvalsViaSlack'>;
  approvals: Pick<ApprovalsService, 'decide' | 'mayDecide' | 'answerQuestion'>;
  /** The questions tool servers ask mid-call, which are stops too (docs/approvals.md#questions-from-tool-servers). */
  questions: Pick<ToolQuestionsRepository, 'shown'>;
  box: SecretBox;
  api: SlackWebApi;
  audit: AuditLog;
  /** PUBLIC_URL: links in messages, and the request URL to give Slack. */
  publicUrl: string | null;
}

/** What a stop's message shows of it while it waits, kept for the updates after (svc_slack_messages.facts). */
interface StopFacts {
  agent: string;
  project: string;
  question: string;
  node: string;
  context: Record<string, string>;
  toolCall: { tool: string; arguments: string } | null;
  decideRole: string;
  needed: number;
  expiresAt: string | null;
}

/**
 * An interaction's answer to Slack, always a 200: `{}` for a button (Slack reads nothing of it), or for a modal's
 * submission whether it closes (`clear`) or shows `errors` at its fields.
 */
export type InteractionAnswer =
  Record<string, never> | { response_action: 'clear' } | { response_action: 'errors'; errors: Record<string, string> };

/** What Slack posts (https://api.slack.com/reference/interaction-payloads), the fields read here. */
interface InteractionPayload {
  type?: string;
  team?: { id?: string } | null;
  api_app_id?: string;
  user?: { id?: string; team_id?: string; name?: string; username?: string };
  trigger_id?: string;
  channel?: { id?: string };
  container?: { channel_id?: string; message_ts?: string };
  actions?: { action_id?: string; value?: string }[];
  view?: {
    callback_id?: string;
    private_metadata?: string;
    state?: { values?: Record<string, Record<string, { value?: string | null }>> };
  };
}

const ACTION_OF = Object.fromEntries(Object.entries(ACTIONS).map(([action, id]) => [id, action])) as Record<
  string,
  StopAction
>;

const refusedBySlack = (error: unknown): never => {
  if (error instanceof SlackRefusedError) throw badRequest(error.message);
  if (error instanceof SlackUnavailableError) throw serviceUnavailable(error.message);
  throw error;
};

/**
 * Slack as a door to stops (docs/approvals.md#slack): an organisation connects its workspace; each stop of its
 * projects is posted to their channel with buttons; a click, verified as Slack signs it, becomes a decision of the
 * person linked to that Slack identity, through the approvals service's one decide(); the message follows the stop
 * wherever it is decided.
 */
export function slackService(deps: SlackServiceDeps) {
  const { access, slack, box, api, audit } = deps;
  /** What the audit log keeps of a connection: the workspace and channel, never the bot token or signing secret. */
  const keptConnection = (row: SlackConnectionRow | undefined) =>
    row ? { team_id: row.team_id, team_name: row.team_name, app_id: row.app_id, channel: row.channel } : null;

  const requestUrl = () =>
    deps.publicUrl ? `${deps.publicUrl.replace(/\/+$/, '')}/integrations/slack/interactions` : null;

  async function view(row: SlackConnectionRow): Promise<SlackConnection> {
    return {
      org_id: row.org_id,
      team_id: row.team_id,
      team_name: row.team_name,
      app_id: row.app_id,
      bot_user_id: row.bot_user_id,
      channel: row.channel,
      project_channels: await slack.projectChannels(row.org_id),
      connected_by: row.connected_by,
      connected_at: row.connected_at.toISOString(),
      request_url: requestUrl(),
      deliveries: await deps.deliveries.latestOfOrg(row.org_id, 'slack', DELIVERIES_SHOWN),
    };
  }

  async function connectionOf(orgId: string): Promise<SlackConnectionRow> {
    const row = await slack.connection(orgId);
    if (!row) throw notFound(`no Slack workspace is connected to organisation ${orgId}`);
    return row;
  }

  /** The stop as its message shows it: live while it waits, then as it was shown, with how it ended. */
  async function stopState(run: StopRunRow, waitSeq: number, kept: StopFacts | null): Promise<StopMessageState | null> {
    const waiting = run.status === 'waiting_approval' && run.event_seq === waitSeq && run.pending_gate !== null;
    const facts = waiting ? factsOf(run, run.pending_gate!) : kept;
    if (!facts) return null;
    const decisions = await deps.gates.listAtStop(run.id, waitSeq);
    const round = waiting ? await deps.gates.roundOf(run.id, waitSeq) : 1;
    const approvals = waiting
      ? await deps.gates.approvalsOf(run.id, waitSeq, facts.needed)
      : { needed: facts.needed, given: 0, by: [] };
    const last = decisions.at(-1);
    let status: StopMessageState['status'];
    if (waiting) status = { kind: 'waiting' };
    else if (last?.decision === 'expire') status = { kind: 'expired', outcome: last.outcome, at: last.decided_at };
    else if (last) {
      // The approvals of the last round, named together ("Ann and Bob").
      const approvers = decisions
        .filter((d) => d.decision === 'approve' || d.decision === 'edit')
        .map((d) => d.decided_by.name);
      const by =
        (last.decision === 'approve' || last.decision === 'edit') && approvers.length > 1
          ? [...new Set(approvers)].join(', ')
          : last.decided_by.name;
      status = {
        kind: 'decided',
        decision: last.decision,
        by,
        at: last.decided_at,
        via: last.via,
        reason: last.reason,
      };
    } else status = { kind: 'ended', runStatus: run.status };
    return {
      stopId: `${run.id}:${waitSeq}`,
      round,
      agent: facts.agent,
      project: facts.project,
      question: facts.question,
      node: facts.node,
      context: facts.context,
      toolCall: facts.toolCall,
      decideRole: facts.decideRole,
      approvals: { needed: facts.needed, by: approvals.by.map((a) => a.name) },
      expiresAt: facts.expiresAt,
      status,
      studioUrl: deps.publicUrl ? studioThreadUrl(deps.publicUrl.replace(/\/+$/, ''), run.thread_id) : null,
    };
  }

  function factsOf(run: StopRunRow, gate: PendingGate): StopFacts {
    const call = gate.tool_call;
    return {
      agent: run.agent,
      project: run.project_name,
      question: gate.question,
      node: gate.node,
      context: call ? {} : gate.context,
      toolCall: call ? { tool: call.tool, arguments: call.canonical_arguments } : null,
      decideRole: gate.decide_role ?? 'member',
      needed: gate.approvals_needed ?? 1,
      expiresAt: run.gate_expires_at?.toISOString() ?? null,
    };
  }

  /** The person a Slack user decides as: her link, or a link made now from an email her identity provider verified. */
  async function personOf(
    connection: SlackConnectionRow,
    token: string,
    slackUserId: string,
  ): Promise<{ principal: Principal; bySelf: boolean } | null> {
    let linked = await slack.linkedUser(connection.team_id, slackUserId);
    if (!linked) {
      const info = await api
        .call<{ user?: { profile?: { email?: string }; is_email_confirmed?: boolean; is_bot?: boolean } }>(
          token,
          'users.info',
          { user: slackUserId },
        )
        .catch((error: unknown) => {
          log.warn(`users.info of a Slack user failed: ${errorMessage(error)}`);
          return null;
        });
      const email = info?.user?.profile?.email;
      if (email && info.user?.is_email_confirmed !== false && !info.user?.is_bot) {
        const user = await slack.userOfVerifiedEmail(email);
        if (user && (await slack.link(user.id, connection.team_id, slackUserId, false))) {
          log.info(`Slack user ${slackUserId} of ${connection.team_id} linked to user ${user.id} by verified email`);
          linked = await slack.linkedUser(connection.team_id, slackUserId);
        }
      }
    }
    if (!linked) return null;
    return {
      principal: {
        id: linked.user_id,
        kind: 'session',
        name: linked.name ?? linked.email ?? linked.user_id,
        ...(linked.email ? { email: linked.email } : {}),
        instanceAdmin: false,
      },
      bySelf: linked.linked_by_self,
    };
  }

  /** Tells one person something in the channel, seen by her alone (chat.postEphemeral). */
  async function tell(token: string, channel: string | undefined, user: string, text: string): Promise<void> {
    if (!channel) return;
    await api
      .call(token, 'chat.postEphemeral', { channel, user, text })
      .catch((error: unknown) => log.warn(`telling a Slack user failed: ${errorMessage(error)}`));
  }

  const notLinked = (connection: SlackConnectionRow, slackUserId: string) =>
    `Your Slack account is not linked to a user of the agent service, so nothing was decided. Link it once in the ` +
    `studio (Settings, Slack) or with PUT /me/slack {"team_id": "${connection.team_id}", "slack_user_id": ` +
    `"${slackUserId}"}${deps.publicUrl ? `: ${deps.publicUrl.replace(/\/+$/, '')}/ui` : ''}.`;

  /** Decides through the one decide(), after the rule of approvals through Slack (see docs/approvals.md#slack). */
  async function decideAs(
    person: { principal: Principal; bySelf: boolean },
    meta: ButtonValue,
    decision: Decision,
  ): Promise<void> {
    const parsed = parseStopId(meta.stop);
    if (decision.decision === 'approve' && !person.bySelf && parsed) {
      if ((await deps.gates.approvalsViaSlack(parsed.runId, parsed.waitSeq)) > 0) {
        throw new ServiceError(
          403,
          'forbidden',
          'this stop already has an approval through Slack, and your Slack account was linked from your email, not by ' +
            'you: link it yourself (the studio, Settings, Slack) or decide in the studio',
        );
      }
    }
    await deps.approvals.decide(
      person.principal,
      { stop: meta.stop, round: meta.round },
      { ...decision, via: 'slack' },
    );
  }

  function buttonValue(text: string | undefined): ButtonValue | null {
    try {
      const value = JSON.parse(text ?? '') as ButtonValue;
      return typeof value.stop === 'string' && Number.isInteger(value.round) ? value : null;
    } catch {
      return null;
    }
  }

  /** Decline on a question's message: answered as the linked person, with her role checked as at the HTTP API. */
  async function onQuestionDecline(
    connection: SlackConnectionRow,
    token: string,
    payload: InteractionPayload,
  ): Promise<InteractionAnswer> {
    const value = buttonValue(payload.actions?.[0]?.value);
    const slackUser = payload.user?.id;
    const channel = payload.container?.channel_id ?? payload.channel?.id;
    if (!value || !slackUser) return {};
    const person = await personOf(connection, token, slackUser);
    if (!person) {
      await tell(token, channel, slackUser, notLinked(connection, slackUser));
      return {};
    }
    try {
      await deps.approvals.answerQuestion(person.principal, value.stop, { action: 'decline' });
    } catch (error) {
      await tell(token, channel, slackUser, `Nothing was answered: ${errorMessage(error)}`);
    }
    return {};
  }

  async function onButton(
    connection: SlackConnectionRow,
    token: string,
    payload: InteractionPayload,
  ): Promise<InteractionAnswer> {
    if (payload.actions?.[0]?.action_id === QUESTION_DECLINE) return onQuestionDecline(connection, token, payload);
    const action = ACTION_OF[payload.actions?.[0]?.action_id ?? ''];
    const value = buttonValue(payload.actions?.[0]?.value);
    const slackUser = payload.user?.id;
    const channel = payload.container?.channel_id ?? payload.channel?.id;
    if (!action || !value || !slackUser) return {};
    const person = await personOf(connection, token, slackUser);
    if (!person) {
      await tell(token, channel, slackUser, notLinked(connection, slackUser));
      return {};
    }
    try {
      if (action === 'approve') {
        await decideAs(person, value, { decision: 'approve', reason: null });
        return {};
      }
      const parsed = parseStopId(value.stop);
      const run = parsed ? await deps.deliveries.runOfStop(parsed.runId) : undefined;
      if (!parsed || !run || !(await deps.approvals.mayDecide(person.principal, run.thread_id))) {
        throw new ServiceError(
          403,
          'forbidden',
          'you may not decide this stop: your role is below the one it asks for',
        );
      }
      const state = await stopState(run, parsed.waitSeq, null);
      if (!state || state.status.kind !== 'waiting')
        throw new ServiceError(409, 'conflict', 'this stop no longer waits');
      if (state.round !== value.round) {
        throw new ServiceError(
          409,
          'conflict',
          `this stop changed since the message you read: it is at round ${state.round} now`,
        );
      }
      await api.call(token, 'views.open', {
        trigger_id: payload.trigger_id,
        view: stopModal(action, state, { ...value, channel: channel ?? null } satisfies ModalMetadata),
      });
    } catch (error) {
      await tell(token, channel, slackUser, `Nothing was decided: ${errorMessage(error)}`);
    }
    return {};
  }

  async function onSubmit(
    connection: SlackConnectionRow,
    token: string,
    payload: InteractionPayload,
  ): Promise<InteractionAnswer> {
    const action = ACTION_OF[payload.view?.callback_id ?? ''];
    let meta: ModalMetadata | null;
    try {
      meta = JSON.parse(payload.view?.private_metadata ?? '') as ModalMetadata;
    } catch {
      meta = null;
    }
    const slackUser = payload.user?.id;
    const values = payload.view?.state?.values ?? {};
    const text = (block: string) => values[block]?.value?.value ?? '';
    const firstBlock = Object.keys(values)[0] ?? 'reason';
    const refuse = (message: string, block = firstBlock): InteractionAnswer => ({
      response_action: 'errors',
      errors: { [block]: message.slice(0, 2000) },
    });
    if (!action || action === 'approve' || !meta || !slackUser || !buttonValue(JSON.stringify(meta))) {
      return {};
    }
    const person = await personOf(connection, token, slackUser);
    if (!person) return refuse(notLinked(connection, slackUser));
    let decision: Decision;
    if (action === 'reject') {
      if (!text('reason').trim()) return refuse('Say why it is rejected', 'reason');
      decision = { decision: 'reject', reason: text('reason').trim() };
    } else if (action === 'respond') {
      if (!text('response').trim()) return refuse('Write the response', 'response');
      decision = { decision: 'respond', reason: null, response: text('response').trim() };
    } else if ('arguments' in values) {
      let args: unknown;
      try {
        args = JSON.parse(text('arguments'));
      } catch (error) {
        return refuse(`Not JSON: ${errorMessage(error)}`, 'arguments');
      }
      if (!args || typeof args !== 'object' || Array.isArray(args)) return refuse('Must be a JSON object', 'arguments');
      decision = { decision: 'approve', reason: null, arguments: args as Record<string, unknown> };
    } else {
      const edits = Object.fromEntries(
        Object.keys(values)
          .filter((block) => block.startsWith('edit:'))
          .map((block) => [block.slice('edit:'.length), text(block)]),
      );
      decision = { decision: 'approve', reason: null, edits };
    }
    try {
      await decideAs(person, meta, decision);
    } catch (error) {
      if (error instanceof ServiceError) return refuse(error.message);
      throw error;
    }
    return { response_action: 'clear' };
  }

  /** Posts a stop's message the first time, updates it after. */
  async function postOrUpdate(
    token: string,
    runId: string,
    waitSeq: number,
    message: { channel: string; ts: string | null },
    rendered: SlackMessage,
  ): Promise<void> {
    if (!message.ts) {
      // Also when the stop has ended meanwhile (Slack was away): the channel learns of it, and how it ended.
      const posted = await api.call<{ channel: string; ts: string }>(token, 'chat.postMessage', {
        channel: message.channel,
        text: rendered.text,
        blocks: rendered.blocks,
        unfurl_links: false,
        unfurl_media: false,
      });
      await slack.posted(runId, waitSeq, posted.channel, posted.ts);
    } else {
      await api.call(token, 'chat.update', {
        channel: message.channel,
        ts: message.ts,
        text: rendered.text,
        blocks: rendered.blocks,
      });
    }
  }

  /**
   * A tool server's question as a message: posted while it waits, in the project's channel, then updated with how
   * it ended. Its row keeps what it asked, so the message needs no facts of its own.
   */
  async function syncQuestion(
    token: string,
    connection: SlackConnectionRow,
    run: StopRunRow,
    waitSeq: number,
    question: ShownQuestion,
  ): Promise<void> {
    if (question.waiting) {
      const channel = (await slack.channelOfProject(run.project_id)) ?? connection.channel;
      await slack.keepFacts(run.id, waitSeq, channel, { question: true });
    }
    const message = await slack.message(run.id, waitSeq);
    if (!message) return;
    const rendered = questionMessage({
      ...questionNotice(question),
      stopId: `${run.id}:${waitSeq}`,
      status: questionStatus(question),
      studioUrl: deps.publicUrl ? studioThreadUrl(deps.publicUrl.replace(/\/+$/, ''), run.thread_id) : null,
    });
    await postOrUpdate(token, run.id, waitSeq, message, rendered);
  }

  return {
    async connect(principal: Principal, orgId: string, body: ConnectSlackBody): Promise<SlackConnection> {
      await access.requireOrgConfigRole(principal, orgId, 'admin');
      const before = await slack.connection(orgId);
      const who = await api
        .call<{ team_id: string; team?: string; user_id?: string; bot_id?: string }>(body.bot_token, 'auth.test')
        .catch(refusedBySlack);
      const bot = who.bot_id
        ? await api
            .call<{ bot?: { app_id?: string } }>(body.bot_token, 'bots.info', { bot: who.bot_id })
            .catch(refusedBySlack)
        : null;
      await slack.connect({
        org_id: orgId,
        team_id: who.team_id,
        team_name: who.team ?? null,
        app_id: bot?.bot?.app_id ?? null,
        bot_user_id: who.user_id ?? null,
        bot_token_sealed: box.seal(body.bot_token),
        signing_secret_sealed: box.seal(body.signing_secret),
        channel: body.channel,
        connected_by: principal.name,
      });
      log.info(
        `organisation ${orgId} connected Slack workspace ${who.team_id} (channel ${body.channel}) by ${principal.name}`,
      );
      const row = await connectionOf(orgId);
      await audit.record(principal, {
        action: 'slack.set',
        orgId,
        target: `Slack connection of organisation ${orgId}`,
        before: keptConnection(before),
        after: keptConnection(row),
      });
      return view(row);
    },

    async get(principal: Principal, orgId: string): Promise<SlackConnection> {
      await access.requireOrgConfigRole(principal, orgId, 'admin');
      return view(await connectionOf(orgId));
    },

    async disconnect(principal: Principal, orgId: string): Promise<void> {
      await access.requireOrgConfigRole(principal, orgId, 'admin');
      const before = await slack.connection(orgId);
      if (!(await slack.disconnect(orgId))) throw notFound(`no Slack workspace is connected to organisation ${orgId}`);
      log.info(`organisation ${orgId} disconnected Slack by ${principal.name}`);
      await audit.record(principal, {
        action: 'slack.removed',
        orgId,
        target: `Slack connection of organisation ${orgId}`,
        before: keptConnection(before),
        after: null,
      });
    },

    /** Posts a test message to the organisation's channel: the token, the channel and the bot's membership at once. */
    async test(principal: Principal, orgId: string): Promise<{ channel: string; ts: string }> {
      await access.requireOrgConfigRole(principal, orgId, 'admin');
      const row = await connectionOf(orgId);
      const posted = await api
        .call<{ channel: string; ts: string }>(box.open(row.bot_token_sealed), 'chat.postMessage', {
          channel: row.channel,
          text: `A test from the agent service by ${principal.name}: stops of this organisation are posted here.`,
        })
        .catch(refusedBySlack);
      return { channel: posted.channel, ts: posted.ts };
    },

    /** A project's own channel (null: the organisation's), set by the organisation's admins. */
    async setProjectChannel(principal: Principal, projectId: string, channel: string | null): Promise<SlackConnection> {
      const orgId = await access.orgIdOfProject(projectId);
      await access.requireProjectRole(principal, projectId, 'viewer', `project ${projectId}`);
      await access.requireOrgConfigRole(principal, orgId, 'admin');
      const row = await connectionOf(orgId);
      const before = (await slack.projectChannels(orgId))[projectId] ?? null;
      await slack.setProjectChannel(projectId, channel);
      // The project's own channel; removed, its stops go to the organisation's again.
      await audit.record(principal, {
        action: channel === null ? 'slack.removed' : 'slack.set',
        projectId,
        target: `Slack channel of project ${projectId}`,
        before: before && { channel: before },
        after: channel && { channel },
      });
      return view(row);
    },

    async links(principal: Principal): Promise<SlackLink[]> {
      return (await slack.linksOf(principal.id)).map((l) => ({
        team_id: l.team_id,
        slack_user_id: l.slack_user_id,
        linked_by_self: l.linked_by_self,
        linked_at: l.linked_at.toISOString(),
      }));
    },

    /** Links the caller's own Slack identity: she decides through Slack as herself from now on. */
    async link(principal: Principal, teamId: string, slackUserId: string): Promise<SlackLink[]> {
      if (principal.kind !== 'session') {
        throw badRequest('only a signed-in person links her Slack identity: sign in, or use her personal access token');
      }
      if (!(await slack.link(principal.id, teamId, slackUserId, true))) {
        throw new ServiceError(409, 'conflict', `Slack user ${slackUserId} of ${teamId} is linked to another person`);
      }
      log.info(`user ${principal.id} linked Slack user ${slackUserId} of ${teamId}`);
      return this.links(principal);
    },

    async unlink(principal: Principal): Promise<void> {
      if (!(await slack.unlink(principal.id))) throw notFound('no Slack identity is linked to you');
    },

    /**
     * An interaction as Slack posts it: verified with the signing secret of the connection its team and app name (v0
     * signature, five-minute window, a signature taken once), then a button or a modal's submission.
     */
    async interact(
      rawBody: Buffer,
      timestamp: string | undefined,
      signature: string | undefined,
    ): Promise<InteractionAnswer> {
      let payload: InteractionPayload;
      try {
        payload = JSON.parse(new URLSearchParams(rawBody.toString('utf8')).get('payload') ?? '') as InteractionPayload;
      } catch {
        throw unauthorized('not a signed Slack interaction');
      }
      const teamId = payload.team?.id ?? payload.user?.team_id;
      const candidates = teamId ? await slack.connectionsOfTeam(teamId) : [];
      const fitting = candidates.filter((c) => !c.app_id || !payload.api_app_id || c.app_id === payload.api_app_id);
      let connection: SlackConnectionRow | undefined;
      let problem = 'no connected Slack workspace sent it';
      for (const candidate of fitting) {
        problem = slackSignatureProblem(box.open(candidate.signing_secret_sealed), timestamp, rawBody, signature) ?? '';
        if (!problem) {
          connection = candidate;
          break;
        }
      }
      if (!connection) throw unauthorized(`not a signed Slack interaction: ${problem}`);
      if (!(await slack.firstSeen(signature!))) throw unauthorized('not a signed Slack interaction: a replay');
      const token = box.open(connection.bot_token_sealed);
      if (payload.type === 'block_actions') return onButton(connection, token, payload);
      if (payload.type === 'view_submission') return onSubmit(connection, token, payload);
      return {};
    },

    /**
     * Brings a stop's message up to date (the worker's one job): posts it the first time, updates it after. Throws
     * when Slack could not take it, which the worker retries.
     */
    async sync(delivery: ClaimedStopDelivery): Promise<void> {
      const run = await deps.deliveries.runOfStop(delivery.run_id);
      const connection = await slack.connection(delivery.org_id);
      if (!run || !connection) return;
      const token = box.open(connection.bot_token_sealed);
      const question = await deps.questions.shown(delivery.run_id, delivery.wait_seq);
      if (question) return syncQuestion(token, connection, run, delivery.wait_seq, question);
      const waiting =
        run.status === 'waiting_approval' && run.event_seq === delivery.wait_seq && run.pending_gate !== null;
      if (waiting) {
        const channel = (await slack.channelOfProject(run.project_id)) ?? connection.channel;
        await slack.keepFacts(run.id, delivery.wait_seq, channel, factsOf(run, run.pending_gate!));
      }
      const message = await slack.message(run.id, delivery.wait_seq);
      // A stop that ended before it was ever seen waiting here has nothing to show.
      if (!message) return;
      const state = await stopState(run, delivery.wait_seq, message.facts as StopFacts | null);
      if (!state) return;
      await postOrUpdate(token, run.id, delivery.wait_seq, message, stopMessage(state));
    },

    /** Seals the connections' secrets again with the current key (after a rotation). */
    async resealStale(): Promise<number> {
      let n = 0;
      for (const row of await slack.all()) {
        if (!box.isStale(row.bot_token_sealed) && !box.isStale(row.signing_secret_sealed)) continue;
        await slack.reseal(
          row.org_id,
          row.bot_token_sealed,
          box.seal(box.open(row.bot_token_sealed)),
          box.seal(box.open(row.signing_secret_sealed)),
        );
        n += 1;
      }
      return n;
    },
  };
}

export type SlackService = ReturnType<typeof slackService>;
