import { createHash, randomBytes } from 'node:crypto';
import { atLeast, type Access } from '../auth/access';
import type { Principal } from '../auth/principal';
import type { ConfigureEmailBody, EmailRecipients, EmailSettings } from '../contracts/email';
import { badRequest, errorMessage, forbidden, notFound, ServiceError, serviceUnavailable } from '../contracts/errors';
import { stopId, studioThreadUrl } from '../contracts/stops';
import type { Role } from '../contracts/tenancy';
import type { EmailLinkRow, EmailRepository, Recipients } from '../db/email.repository';
import type { GateDecisionsRepository, LastDecision } from '../db/gate-decisions.repository';
import type { InstanceSettingsRepository } from '../db/instance-settings.repository';
import type { ClaimedStopDelivery, StopDeliveriesRepository, StopRunRow } from '../db/stop-deliveries.repository';
import type { ShownQuestion, ToolQuestionsRepository } from '../db/tool-questions.repository';
import type { UsersRepository } from '../db/users.repository';
import { getLogger } from '../log';
import { mailServerAddress, sendMail, type Mail, type SmtpServer } from '../mail/smtp';
import { questionMail } from '../mail/question-mail';
import { stopMail } from '../mail/stop-mail';
import { InternalAddressError } from '../net/guarded-lookup';
import type { SecretBox } from '../secrets/secret-box';
import { QUESTION_ROLE, type ApprovalsService } from './approvals.service';
import { questionNotice } from './open-questions';
import type { AuditLog } from '../auth/audit-log';

const log = getLogger('svc.mail');

/** Where the instance's mail server is kept (svc_instance_settings), its password sealed. */
const SETTINGS_KEY = 'email';
/** How long a decision link of a stop without an expiry works. */
const LINK_DAYS = 7;

interface KeptSettings {
  host: string;
  port: number;
  secure: boolean;
  from: string;
  user: string | null;
  password_sealed: string | null;
  updated_by: string;
  updated_at: string;
}

export interface EmailServiceDeps {
  access: Access;
  email: EmailRepository;
  settings: InstanceSettingsRepository;
  deliveries: Pick<StopDeliveriesRepository, 'runOfStop'>;
  gates: Pick<GateDecisionsRepository, 'roundOf' | 'latestAtStop'>;
  users: Pick<UsersRepository, 'get'>;
  approvals: Pick<ApprovalsService, 'decide'>;
  /** The questions tool servers ask mid-call, which are stops too (docs/approvals.md#questions-from-tool-servers). */
  questions: Pick<ToolQuestionsRepository, 'shown'>;
  box: SecretBox;
  publicUrl: string | null;
  /** WEBHOOK_ALLOW_PRIVATE_URLS: the mail server may be on the server's own network. */
  allowPrivate: boolean;
  audit: AuditLog;
}

/** What the audit log keeps of the mail server: where and as whom, and whether a password is kept (never which). */
const keptServer = (s: KeptSettings | undefined) =>
  s
    ? {
        host: s.host,
        port: s.port,
        secure: s.secure,
        from: s.from,
        user: s.user,
        has_password: s.password_sealed !== null,
      }
    : null;

/** What a decision link opens: the stop, or why it decides nothing any more. */
export type LinkView =
  | { state: 'open'; stop: LinkStop; recipient: string }
  | { state: 'unknown' | 'used' | 'expired' | 'ended' | 'changed'; message: string; stop: LinkStop | null };

export interface LinkStop {
  agent: string;
  project: string;
  question: string;
  node: string;
  context: Record<string, string>;
  toolCall: { tool: string; arguments: string } | null;
  studioUrl: string | null;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

const VERBS = { approve: 'approved', edit: 'approved with edits', respond: 'sent back', reject: 'rejected' };
const how = (last: LastDecision | undefined) =>
  !last
    ? 'it no longer waits'
    : last.decision === 'expire'
      ? `it expired at ${last.at}`
      : `it was ${VERBS[last.decision]} by ${last.by} at ${last.at}`;

/**
 * Mail as a door to stops (docs/approvals.md#mail): the instance's mail server (its administrator's alone: an
 * organisation's admin choosing the host would make the server connect into its own network), whom each organisation's
 * or project's stops are mailed to, the mail of a stop with a decision link per person (a single-use token, only its
 * hash kept, bound to the stop's round), and the decision such a link confirms, through the one decide().
 */
export function emailService(deps: EmailServiceDeps) {
  const { access, email, box } = deps;
  const base = () => deps.publicUrl?.replace(/\/+$/, '') ?? null;

  async function kept(): Promise<KeptSettings | undefined> {
    const text = await deps.settings.get(SETTINGS_KEY);
    return text ? (JSON.parse(text) as KeptSettings) : undefined;
  }

  const view = (s: KeptSettings): EmailSettings => ({
    host: s.host,
    port: s.port,
    secure: s.secure,
    from: s.from,
    user: s.user,
    password_set: s.password_sealed !== null,
    updated_by: s.updated_by,
    updated_at: s.updated_at,
  });

  function requireInstanceAdmin(principal: Principal): void {
    if (!principal.instanceAdmin) {
      throw forbidden("the mail server is the instance administrator's setting");
    }
  }

  async function server(): Promise<SmtpServer> {
    const s = await kept();
    if (!s) throw new Error('no mail server is set: the instance administrator sets one (PUT /settings/email)');
    return {
      host: s.host,
      port: s.port,
      secure: s.secure,
      from: s.from,
      user: s.user,
      password: s.password_sealed ? box.open(s.password_sealed) : null,
    };
  }

  /** Sends one mail, with the service's errors: a refused address 400, an unreachable server 503. */
  async function send(to: string, mail: Parameters<typeof sendMail>[1]): Promise<string | null> {
    try {
      return await sendMail(await server(), { ...mail, to }, deps.allowPrivate);
    } catch (error) {
      if (error instanceof InternalAddressError) throw badRequest(error.message);
      throw serviceUnavailable(`the mail server did not take the mail: ${errorMessage(error)}`);
    }
  }

  async function scopeRecipients(run: StopRunRow): Promise<Recipients | null> {
    const row = (await email.recipients('project', run.project_id)) ?? (await email.recipients('org', run.org_id));
    return row?.recipients ?? null;
  }

  /** The people a stop is mailed to: by role, or the named addresses (each the person it belongs to, if any). */
  async function targetsOf(run: StopRunRow, decideRole: Role): Promise<{ to: string; userId: string | null }[]> {
    const recipients = await scopeRecipients(run);
    if (!recipients) return [];
    if (recipients === 'deciders') {
      const people = await email.peopleOfProject(run.project_id);
      return people.filter((p) => atLeast(p.role, decideRole)).map((p) => ({ to: p.email, userId: p.id }));
    }
    const targets = [];
    for (const address of recipients) {
      const users = await email.usersOfEmail(address);
      targets.push({ to: address, userId: users.length === 1 ? users[0]!.id : null });
    }
    return targets;
  }

  /** Sends a mail whose link row is kept: marked sent once it went, dropped if it could not go. */
  async function sendKept(linkSha256: string, mail: Mail): Promise<void> {
    try {
      await sendMail(await server(), mail, deps.allowPrivate);
    } catch (error) {
      await email.dropLink(linkSha256);
      throw error;
    }
    await email.linkSent(linkSha256);
  }

  /**
   * A tool server's question, mailed once while it waits to the people who may answer it (a member or above), or to
   * the addresses chosen. Its mail has no decision link (an answer needs the question's fields): the studio answers
   * it. Each address mailed is kept as a link row nobody holds (its token is never sent), as the gates' mails keep
   * theirs, so that a retry after a failure mails only the addresses not yet mailed.
   */
  async function mailQuestion(run: StopRunRow, waitSeq: number, question: ShownQuestion): Promise<void> {
    if (!question.waiting) return;
    if (!base()) throw new Error('PUBLIC_URL is not set: a mail links to the service, at its public address');
    const mailed = new Set(await email.mailedAt(run.id, waitSeq));
    for (const target of await targetsOf(run, QUESTION_ROLE)) {
      if (mailed.has(target.to)) continue;
      const hash = sha256(randomBytes(32).toString('base64url'));
      await email.addLink({
        token_sha256: hash,
        run_id: run.id,
        wait_seq: waitSeq,
        round: 1,
        user_id: null,
        recipient: target.to,
        expires_at: new Date(question.expires_at),
      });
      const mail = questionMail(target.to, {
        ...questionNotice(question),
        studioUrl: studioThreadUrl(base()!, run.thread_id),
      });
      await sendKept(hash, mail);
      mailed.add(target.to);
    }
    log.info(`question ${stopId(run.id, waitSeq)} mailed to ${mailed.size} address(es)`);
  }

  function stopOfRun(run: StopRunRow): LinkStop | null {
    const gate = run.pending_gate;
    if (!gate) return null;
    return {
      agent: run.agent,
      project: run.project_name,
      question: gate.question,
      node: gate.node,
      context: gate.tool_call ? {} : gate.context,
      toolCall: gate.tool_call ? { tool: gate.tool_call.tool, arguments: gate.tool_call.canonical_arguments } : null,
      studioUrl: base() ? studioThreadUrl(base()!, run.thread_id) : null,
    };
  }

  /** A link, and where its stop stands: open only while the stop waits at the round the mail showed. */
  async function linkState(token: string): Promise<{ link: EmailLinkRow | undefined; view: LinkView }> {
    const link = /^[A-Za-z0-9_-]{43}$/.test(token) ? await email.link(sha256(token)) : undefined;
    if (!link) {
      const message = 'This link is not one this service sent, or it was mistyped: nothing was decided.';
      return { link, view: { state: 'unknown', message, stop: null } };
    }
    const run = await deps.deliveries.runOfStop(link.run_id);
    const waiting = run?.status === 'waiting_approval' && run.event_seq === link.wait_seq && run.pending_gate;
    const stop = waiting ? stopOfRun(run) : null;
    if (link.used_at) {
      const message = `This link was used at ${link.used_at.toISOString()}: a link decides once.`;
      return { link, view: { state: 'used', message, stop } };
    }
    if (!waiting) {
      const last = await deps.gates.latestAtStop(link.run_id, link.wait_seq);
      return { link, view: { state: 'ended', message: `Nothing to decide here: ${how(last)}.`, stop: null } };
    }
    if (link.expires_at.getTime() <= Date.now()) {
      const message = `This link expired at ${link.expires_at.toISOString()}: nothing was decided.`;
      return { link, view: { state: 'expired', message, stop } };
    }
    const round = await deps.gates.roundOf(link.run_id, link.wait_seq);
    if (round !== link.round) {
      const last = await deps.gates.latestAtStop(link.run_id, link.wait_seq);
      const message =
        `What this mail showed changed since it was sent (${how(last)}; it is at round ${round} now): ` +
        'read it again in the studio and decide there.';
      return { link, view: { state: 'changed', message, stop } };
    }
    return { link, view: { state: 'open', stop: stop!, recipient: link.recipient } };
  }

  return {
    async getSettings(principal: Principal): Promise<EmailSettings> {
      requireInstanceAdmin(principal);
      const s = await kept();
      if (!s) throw notFound('no mail server is set');
      return view(s);
    },

    async configure(principal: Principal, body: ConfigureEmailBody): Promise<EmailSettings> {
      requireInstanceAdmin(principal);
      try {
        await mailServerAddress(body.host, deps.allowPrivate);
      } catch (error) {
        throw badRequest(
          error instanceof InternalAddressError
            ? error.message
            : `host ${body.host} does not resolve: ${errorMessage(error)}`,
        );
      }
      const before = await kept();
      const next: KeptSettings = {
        host: body.host,
        port: body.port,
        secure: body.secure,
        from: body.from,
        user: body.user ?? null,
        password_sealed:
          body.password !== undefined
            ? body.password
              ? box.seal(body.password)
              : null
            : (before?.password_sealed ?? null),
        updated_by: principal.name,
        updated_at: new Date().toISOString(),
      };
      await deps.settings.set(SETTINGS_KEY, JSON.stringify(next), principal.name);
      log.info(`mail server set to ${body.host}:${body.port} by ${principal.name}`);
      await deps.audit.record(principal, {
        action: 'email.set',
        target: 'mail server',
        before: keptServer(before),
        after: keptServer(next),
      });
      return view(next);
    },

    /** A test mail to the caller (or the address given), through the server as it is set. */
    async test(principal: Principal, to: string | undefined): Promise<{ to: string; message_id: string | null }> {
      requireInstanceAdmin(principal);
      const address = to ?? principal.email;
      if (!address) throw badRequest('you have no address here: give `to`');
      const text = `A test from the agent service by ${principal.name}: stops can be mailed through this server.`;
      const id = await send(address, {
        to: address,
        subject: 'A test from the agent service',
        text,
        html: `<p>${text}</p>`,
      });
      return { to: address, message_id: id };
    },

    async recipients(principal: Principal, scopeType: 'org' | 'project', scopeId: string): Promise<EmailRecipients> {
      if (scopeType === 'org') await access.requireOrgConfigRole(principal, scopeId, 'viewer');
      else await access.requireProjectRole(principal, scopeId, 'viewer', `project ${scopeId}`);
      const row = await email.recipients(scopeType, scopeId);
      return {
        scope_type: scopeType,
        scope_id: scopeId,
        recipients: row?.recipients ?? null,
        updated_by: row?.updated_by ?? null,
        updated_at: row?.updated_at.toISOString() ?? null,
      };
    },

    /** Whom the scope's stops are mailed to: its organisation's admins, or a project's owners. */
    async setRecipients(
      principal: Principal,
      scopeType: 'org' | 'project',
      scopeId: string,
      recipients: Recipients | null,
    ): Promise<EmailRecipients> {
      if (scopeType === 'org') await access.requireOrgConfigRole(principal, scopeId, 'admin');
      else await access.requireProjectRole(principal, scopeId, 'owner', `project ${scopeId}`);
      const before = (await email.recipients(scopeType, scopeId))?.recipients ?? null;
      await email.setRecipients(scopeType, scopeId, recipients, principal.name);
      await deps.audit.record(principal, {
        action: recipients === null ? 'email.removed' : 'email.set',
        ...(scopeType === 'org' ? { orgId: scopeId } : { projectId: scopeId }),
        target: `mail recipients of ${scopeType === 'org' ? 'organisation' : 'project'} ${scopeId}`,
        before: before && { recipients: before },
        after: recipients && { recipients },
      });
      return this.recipients(principal, scopeType, scopeId);
    },

    /**
     * Mails a stop that starts waiting to its people (the worker's job for `via = 'email'`): each gets her own
     * decision link; a retry mails only those not mailed yet. Throws when the server could not take a mail.
     */
    async deliver(delivery: ClaimedStopDelivery): Promise<void> {
      const run = await deps.deliveries.runOfStop(delivery.run_id);
      const question = run && (await deps.questions.shown(run.id, delivery.wait_seq));
      if (question) return mailQuestion(run!, delivery.wait_seq, question);
      const gate = run?.pending_gate;
      if (!run || !gate || run.status !== 'waiting_approval' || run.event_seq !== delivery.wait_seq) return;
      if (!base()) throw new Error('PUBLIC_URL is not set: a mail links to the service, at its public address');
      const stop = stopOfRun(run)!;
      const round = await deps.gates.roundOf(run.id, delivery.wait_seq);
      const mailed = new Set(await email.mailedAt(run.id, delivery.wait_seq));
      const expires = run.gate_expires_at ?? new Date(Date.now() + LINK_DAYS * 86_400_000);
      for (const target of await targetsOf(run, gate.decide_role ?? 'member')) {
        if (mailed.has(target.to)) continue;
        const token = randomBytes(32).toString('base64url');
        const hash = sha256(token);
        // Kept before the mail goes (a link nobody holds is harmless); the people without an account get no link.
        await email.addLink({
          token_sha256: hash,
          run_id: run.id,
          wait_seq: delivery.wait_seq,
          round,
          user_id: target.userId,
          recipient: target.to,
          expires_at: expires,
        });
        const mail = stopMail(target.to, {
          ...stop,
          studioUrl: stop.studioUrl!,
          expiresAt: run.gate_expires_at?.toISOString() ?? null,
          decisionUrl: target.userId ? `${base()}/stop-links/${token}` : null,
        });
        await sendKept(hash, mail);
        mailed.add(target.to);
      }
      log.info(`stop ${stopId(run.id, delivery.wait_seq)} mailed to ${mailed.size} address(es)`);
    },

    /** What a decision link shows (a GET decides nothing: a mail scanner may open it). */
    async openLink(token: string): Promise<LinkView> {
      return (await linkState(token)).view;
    },

    /**
     * The confirmation of a decision link: used once, as the person the mail was sent to, whose role is checked again
     * now, at the round the mail showed. The answer says what happened, in words for the page.
     */
    async decideByLink(
      token: string,
      decision: 'approve' | 'reject',
      reason: string | null,
    ): Promise<{ decided: boolean; message: string; view: LinkView; status?: number }> {
      const { link, view: before } = await linkState(token);
      if (!link || before.state !== 'open' || !link.user_id) {
        return { decided: false, message: 'message' in before ? before.message : 'Nothing was decided.', view: before };
      }
      if (decision === 'reject' && !reason?.trim()) {
        return { decided: false, message: 'Say why it is rejected: nothing was decided.', view: before, status: 400 };
      }
      if (!(await email.useLink(link.token_sha256))) {
        return {
          decided: false,
          message: 'This link was used already: a link decides once.',
          view: before,
          status: 410,
        };
      }
      const user = await deps.users.get(link.user_id);
      if (!user) return { decided: false, message: 'The person this mail was sent to is gone.', view: before };
      const principal: Principal = {
        id: user.id,
        kind: 'session',
        name: user.name ?? user.email ?? user.id,
        ...(user.email ? { email: user.email } : {}),
        instanceAdmin: false,
      };
      try {
        await deps.approvals.decide(
          principal,
          { stop: stopId(link.run_id, link.wait_seq), round: link.round },
          decision === 'approve'
            ? { decision: 'approve', reason: reason?.trim() || null, via: 'email' }
            : { decision: 'reject', reason: reason!.trim(), via: 'email' },
        );
      } catch (error) {
        if (error instanceof ServiceError) {
          return {
            decided: false,
            message: `Nothing was decided: ${error.message}`,
            view: before,
            status: error.status,
          };
        }
        // The service could not decide (the database away): the link may be used again.
        await email.unuseLink(link.token_sha256);
        throw error;
      }
      log.info(`stop ${stopId(link.run_id, link.wait_seq)} ${decision}d by ${principal.name} from a mail`);
      const verb = decision === 'approve' ? 'Approved' : 'Rejected';
      return { decided: true, message: `${verb}, as ${principal.name}. Thank you.`, view: before };
    },
  };
}

export type EmailService = ReturnType<typeof emailService>;
