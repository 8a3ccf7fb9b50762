import { setTimeout as sleep } from 'node:timers/promises';
import type { RunDetail } from '../../contracts/runs';
import type { RunEvent } from '../../contracts/events';
import type { FollowableRun } from '../../services/runs.service';
import { askAtStop } from './questions';
import type { McpRequestContext, McpServices, ToolExtra } from './mcp-call';
import type { RunResult } from './mcp-schemas';
import { runResult } from './run-results';

/** How often a call that waits for a person looks at the question's row and at the run. */
const POLL_MS = 500;
/**
 * How often a call that waits says so in a progress notification: a client that resets its request timeout on
 * progress (the SDK's `resetTimeoutOnProgress`) then waits as long as the person takes.
 */
const HEARTBEAT_MS = 15_000;
/** The events a progress notification tells of. */
const REPORTED = new Set<RunEvent['type']>([
  'node_enter',
  'queue',
  'server_queue',
  'tool_call',
  'gate_waiting',
  'tool_waiting',
]);

/**
 * Follows a run inside one `tools/call` (docs/mcp.md#approval-inside-the-call): its events become progress
 * notifications when the client sent a progress token; where the run waits for a person whom this caller may
 * stand for, the question is asked in the call (elicitation) and the run goes on with the answer. The answer may
 * reach any process: that one decides through the approvals service and marks the question's row; this call
 * follows the run's stored events, so it sees the run resume wherever it runs.
 */
export class RunFollower {
  private progress = 0;

  constructor(
    private readonly services: McpServices,
    private readonly context: McpRequestContext,
    private readonly extra: ToolExtra,
  ) {}

  async follow(run: FollowableRun): Promise<RunResult> {
    const { signal } = this.extra;
    let after = run.since;
    for (;;) {
      let moved = false;
      for await (const batch of run.events(after, signal)) {
        for (const event of batch) {
          after = event.id;
          moved = true;
          // Tokens are most of a run's events: only the few that say where the run is are read.
          if (REPORTED.has(event.type)) await this.report(JSON.parse(event.data) as RunEvent);
        }
      }
      const detail = await this.services.runsService.runDetail(this.context.principal, run.runId);
      if (signal.aborted) return runResult(detail, this.context.baseUrl);
      if (detail.status === 'waiting_approval' && detail.pending_gate) {
        const unanswered = await this.ask(detail, after);
        if (unanswered) return runResult(detail, this.context.baseUrl, unanswered);
        continue;
      }
      if (detail.status !== 'running') return runResult(detail, this.context.baseUrl);
      // Running, with nothing new yet (a resumed leg that no process has picked up): look again shortly.
      if (!moved) await sleep(POLL_MS, undefined, { signal }).catch(() => undefined);
    }
  }

  /** A progress notification, when the client asked for them. */
  private async notify(message: string): Promise<void> {
    const token = this.extra._meta?.progressToken;
    if (token === undefined) return;
    this.progress += 1;
    await this.extra
      .sendNotification({
        method: 'notifications/progress',
        params: { progressToken: token, progress: this.progress, message },
      })
      .catch(() => undefined);
  }

  private async report(event: RunEvent): Promise<void> {
    switch (event.type) {
      case 'node_enter':
        return this.notify(`phase ${event.node}`);
      case 'queue':
        return this.notify(
          `${event.node}: waiting for the local model, ${event.position} in line (about ${Math.ceil(event.estimated_wait_s)} s)`,
        );
      case 'server_queue':
        return this.notify(`waiting for the server, ${event.position} in line`);
      case 'tool_call':
        return this.notify(`${event.node}: calling ${event.tool}`);
      case 'gate_waiting':
      case 'tool_waiting':
        return this.notify(`waiting for approval at ${event.node}`);
      default:
        return;
    }
  }

  /**
   * Asks the person at the run's gate or tool call, and waits for the answer. Undefined when the run went on (the
   * answer was taken, or someone decided elsewhere); otherwise why it was not answered here.
   */
  private async ask(run: RunDetail, seen: number): Promise<string | undefined> {
    const asked = await askAtStop(this.services, this.context, run);
    if (typeof asked === 'string') return asked;
    await this.context.transport.send(asked.request, { relatedRequestId: this.extra.requestId });
    return this.awaitAnswer(asked.id, run, seen);
  }

  private async awaitAnswer(id: string, run: RunDetail, seen: number): Promise<string | undefined> {
    const { signal } = this.extra;
    const { sessions, runsService, elicitationTimeoutS } = this.services;
    const deadline = Date.now() + elicitationTimeoutS * 1000;
    let heartbeat = Date.now() + HEARTBEAT_MS;
    while (!signal.aborted) {
      await sleep(POLL_MS, undefined, { signal }).catch(() => undefined);
      const answer = await sessions.state(id);
      if (answer?.state === 'decided') return undefined;
      if (answer?.state === 'declined') return 'the question was declined in the client; the run still waits';
      if (answer?.state === 'failed') return `the answer could not be taken: ${answer.outcome}`;
      if (answer?.state === 'answering') continue;
      // Decided elsewhere (the studio, the inbox, another call): the run went on without this answer.
      const stream = await runsService.stream(this.context.principal, run.id, seen);
      if (!stream.over) return (await this.withdraw(id, 'decided elsewhere')) ? undefined : this.settled(id);
      if (Date.now() >= deadline) {
        if (await this.withdraw(id, 'nobody answered in time')) {
          return `nobody answered within ${elicitationTimeoutS} s; the run still waits`;
        }
        return this.settled(id);
      }
      if (Date.now() >= heartbeat) {
        heartbeat = Date.now() + HEARTBEAT_MS;
        await this.notify(`waiting for your answer at ${run.pending_gate!.node}`);
      }
    }
    await this.withdraw(id, 'the call ended');
    return 'the call ended before an answer came; the run still waits';
  }

  /** Takes the question back (the client closes its form): false when an answer came first. */
  private async withdraw(id: string, reason: string): Promise<boolean> {
    if (!(await this.services.sessions.expire(id))) return false;
    await this.context.transport
      .send(
        { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason } },
        { relatedRequestId: this.extra.requestId },
      )
      .catch(() => undefined);
    return true;
  }

  /** An answer that came just as the question was taken back: what it did. */
  private async settled(id: string): Promise<string | undefined> {
    for (;;) {
      const answer = await this.services.sessions.state(id);
      if (answer?.state === 'decided') return undefined;
      if (answer?.state === 'answering') {
        await sleep(POLL_MS);
        continue;
      }
      if (answer?.state === 'failed') return `the answer could not be taken: ${answer.outcome}`;
      return 'the question was declined in the client; the run still waits';
    }
  }
}
