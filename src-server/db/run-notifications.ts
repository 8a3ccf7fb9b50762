import pg from 'pg';
import { getLogger } from '../log';
import { errorMessage } from '../contracts/errors';

const log = getLogger('svc.db');

/** The channel on which a cancelled run's id is announced to every server process (see runs.repository cancel). */
export const CANCEL_CHANNEL = 'svc_run_cancel';

/**
 * Cancellation must reach the process that executes a run, which may not be the one that took the
 * request: every process LISTENs on one channel and aborts the runs it owns. Reconnects after a
 * database restart.
 */
export async function listenForCancellations(
  databaseUrl: string,
  onCancel: (runId: string) => void,
): Promise<{ close(): Promise<void> }> {
  const channel = CANCEL_CHANNEL;
  let client: pg.Client | undefined;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;

  const connect = async () => {
    const next = new pg.Client({ connectionString: databaseUrl });
    next.on('notification', (message) => {
      if (message.channel === channel && message.payload) onCancel(message.payload);
    });
    next.on('error', (error) => {
      log.warn(`cancellation listener lost its connection: ${error.message}`);
      scheduleReconnect();
    });
    try {
      await next.connect();
      await next.query(`LISTEN ${channel}`);
      if (closed) {
        await next.end();
        return;
      }
      client = next;
    } catch (error) {
      await next.end().catch(() => undefined);
      log.warn(`cancellation listener cannot connect: ${errorMessage(error)}`);
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
