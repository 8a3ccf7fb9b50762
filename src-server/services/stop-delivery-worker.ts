import { errorMessage } from '../contracts/errors';
import type { ClaimedStopDelivery, StopDeliveriesRepository } from '../db/stop-deliveries.repository';
import { getLogger } from '../log';
import { SlackRefusedError } from '../slack/slack-web-api';

const log = getLogger('svc.slack');

/** Messages one process brings up to date at once. */
const CONCURRENCY = 4;
/** Read the outbox at least this often, whatever NOTIFY said. */
const POLL_MS = 5000;
/** A claim outlives one Slack call's time limit (10 s) by this much. */
const LEASE_S = 20;
/** Attempts of one delivery before it is given up as failed (shown in the connection's deliveries). */
export const MAX_ATTEMPTS = 8;
/** The first retry's wait; each later one waits twice as long, at most ten minutes. */
const RETRY_BASE_S = 2;
const MAX_RETRY_S = 600;

/**
 * Sends the stops' messages of every organisation with Slack (docs/approvals.md#slack): claims rows of the outbox the
 * triggers write, and has the Slack service post or update each stop's message. A failure is retried with a growing
 * wait; Slack being away delays the messages only, never a decision, which is taken in the service first.
 */
export class StopDeliveryWorker {
  private readonly inFlight = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private reading: Promise<void> | undefined;
  private readAgain = false;
  private closed = false;

  constructor(
    private readonly deliveries: StopDeliveriesRepository,
    private readonly sync: (delivery: ClaimedStopDelivery) => Promise<void>,
    private readonly owner: string,
  ) {}

  start(): void {
    void this.read();
  }

  /** Something was queued (NOTIFY on the webhooks' channel, which the outbox triggers share). */
  wake(): void {
    void this.read();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.reading;
    await Promise.allSettled([...this.inFlight.values()]);
  }

  private read(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.reading) {
      this.readAgain = true;
      return this.reading;
    }
    this.reading = this.readOutbox().finally(() => (this.reading = undefined));
    return this.reading;
  }

  private async readOutbox(): Promise<void> {
    let waitMs = POLL_MS;
    try {
      do {
        this.readAgain = false;
        const free = CONCURRENCY - this.inFlight.size;
        if (free <= 0) break;
        const claimed = await this.deliveries.claim(this.owner, LEASE_S, free);
        for (const delivery of claimed) this.send(delivery);
        if (claimed.length === free) this.readAgain = true;
      } while (this.readAgain && !this.closed);
      const dueS = await this.deliveries.nextDueInS();
      if (dueS !== null) waitMs = Math.min(POLL_MS, Math.max(50, dueS * 1000));
    } catch (error) {
      log.warn(`reading the Slack outbox failed: ${errorMessage(error)}`);
    }
    if (this.closed) return;
    if (this.readAgain) waitMs = 0;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.read(), waitMs);
    this.timer.unref();
  }

  private send(delivery: ClaimedStopDelivery): void {
    const sending = this.attempt(delivery)
      .catch((error) => log.warn(`Slack delivery ${delivery.id} could not be recorded: ${errorMessage(error)}`))
      .finally(() => {
        this.inFlight.delete(delivery.id);
        this.wake();
      });
    this.inFlight.set(delivery.id, sending);
  }

  private async attempt(delivery: ClaimedStopDelivery): Promise<void> {
    const covered = await this.deliveries.pendingOfStop(delivery);
    try {
      await this.sync(delivery);
    } catch (error) {
      if (this.closed) {
        await this.deliveries.release(delivery.id, this.owner);
        return;
      }
      // Slack's no to a channel or a token does not change by waiting long; anything else may.
      const last = delivery.attempts >= MAX_ATTEMPTS;
      const retryInS = last ? null : Math.min(MAX_RETRY_S, RETRY_BASE_S * 2 ** (delivery.attempts - 1));
      const message = errorMessage(error);
      await this.deliveries.failed(delivery.id, this.owner, message, retryInS);
      const what = `${delivery.via === 'slack' ? 'Slack message' : 'mail'} of stop ${delivery.run_id}:${delivery.wait_seq} (attempt ${delivery.attempts})`;
      if (last) log.warn(`${what} given up: ${message}`);
      else if (error instanceof SlackRefusedError) log.warn(`${what} refused by Slack: ${message}; tried again`);
      else log.info(`${what} failed: ${message}; tried again in ${retryInS} s`);
      return;
    }
    await this.deliveries.delivered(delivery.id, this.owner, covered);
  }
}
