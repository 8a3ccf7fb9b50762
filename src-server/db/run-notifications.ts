import pg from 'pg';
import { errorMessage } from '../contracts/errors';
import { getLogger } from '../log';
import { APPLICATION_NAME } from './pool';
import { RUN_EVENTS_CHANNEL } from './run-events.repository';
import { WEBHOOK_CHANNEL } from './webhooks.repository';

const log = getLogger('svc.db');

/** The channel on which a cancelled run's id is announced to every server process (see runs.repository cancel). */
export const CANCEL_CHANNEL = 'svc_run_cancel';

/** The channel on which a thread whose run ended with runs queued behind it is announced (svc_run_ready). */
export const RUN_READY_CHANNEL = 'svc_run_ready';

/** The channel on which a stored agent's change is announced (its id), by a trigger on svc_agents. */
export const AGENTS_CHANNEL = 'svc_agents';

/** The channel on which the local-runtime queue announces that its slots or waiters changed. */
export const QUEUE_CHANNEL = 'svc_llm_queue';

export interface RunNotificationHandlers {
  /** A run was cancelled: the process executing it aborts it. */
  cancelled(runId: string): void;
  /** A thread's line of queued runs may move: a process with room starts the next one. */
  runReady?(threadId: string): void;
  /** Events of a run were stored up to `seq`: followers in this process fetch them. */
  eventsStored(runId: string, seq: number): void;
  /** The local-runtime queue changed; `granted` are the tickets that got a slot just now. */
  queueChanged(granted: number[]): void;
  /** Webhook deliveries were queued (by the outbox triggers): this process's sender reads the outbox. */
  webhooksQueued?(): void;
  /** A stored agent was created, changed or deleted: this process reads it again. */
  agentChanged?(agentId: string): void;
  /** The connection was lost and is back: anything announced meanwhile must be looked up. */
  reconnected(): void;
}

/**
 * What one process must hear from the others, on one connection: cancellations, stored events, queue changes and
 * queued webhook deliveries (NOTIFY is sent in the same statements that make the changes, in the repositories and
 * the outbox triggers). Reconnects
 * after a database restart, and says so, since notifications sent while it was away are lost.
 */
export async function listenForRunNotifications(
  databaseUrl: string,
  handlers: RunNotificationHandlers,
): Promise<{ close(): Promise<void> }> {
  let client: pg.Client | undefined;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;
  let connectedBefore = false;

  const dispatch = (message: pg.Notification) => {
    const payload = message.payload ?? '';
    if (message.channel === CANCEL_CHANNEL) {
      if (payload) handlers.cancelled(payload);
    } else if (message.channel === RUN_EVENTS_CHANNEL) {
      const colon = payload.lastIndexOf(':');
      const seq = Number(payload.slice(colon + 1));
      if (colon > 0 && Number.isInteger(seq)) handlers.eventsStored(payload.slice(0, colon), seq);
    } else if (message.channel === QUEUE_CHANNEL) {
      handlers.queueChanged(payload ? payload.split(',').map(Number) : []);
    } else if (message.channel === RUN_READY_CHANNEL) {
      if (payload) handlers.runReady?.(payload);
    } else if (message.channel === WEBHOOK_CHANNEL) {
      handlers.webhooksQueued?.();
    } else if (message.channel === AGENTS_CHANNEL) {
      if (payload) handlers.agentChanged?.(payload);
    }
  };

  const connect = async () => {
    const next = new pg.Client({ connectionString: databaseUrl, application_name: APPLICATION_NAME });
    next.on('notification', dispatch);
    next.on('error', (error) => {
      log.warn(`run notification listener lost its connection: ${error.message}`);
      scheduleReconnect();
    });
    try {
      await next.connect();
      await next.query(
        `LISTEN ${CANCEL_CHANNEL}; LISTEN ${RUN_EVENTS_CHANNEL}; LISTEN ${QUEUE_CHANNEL}; LISTEN ${WEBHOOK_CHANNEL}; ` +
          `LISTEN ${RUN_READY_CHANNEL}; LISTEN ${AGENTS_CHANNEL}`,
      );
      if (closed) {
        await next.end();
        return;
      }
      client = next;
      if (connectedBefore) handlers.reconnected();
      connectedBefore = true;
    } catch (error) {
      await next.end().catch(() => undefined);
      log.warn(`run notification listener cannot connect: ${errorMessage(error)}`);
      scheduleReconnect();
    }
  };

  const scheduleReconnect = () => {
    if (closed || retry) return;
    const previous = client;
    client = undefined;
    void previous?.end().catch(() => undefined);
    retry = setTimeout(() => {
      retry = undefined;
      void connect();
    }, 1000);
    retry.unref();
  };

  await connect();
  return {
    async close() {
      closed = true;
      clearTimeout(retry);
      await client?.end().catch(() => undefined);
    },
  };
}
