import http from 'node:http';
import https from 'node:https';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { Webhook } from 'standardwebhooks';
import { errorMessage } from '../contracts/errors';
import type { ClaimedDelivery, InFlightLimits, WebhooksRepository } from '../db/webhooks.repository';
import { getLogger } from '../log';
import { SVC } from '../tracing/gen-ai';
import { contextOf, traceHeaders, tracer } from '../tracing/trace-context';
import { checkAddressLiteral, guardedLookup } from '../net/guarded-lookup';
import { webhookAddressRule, webhookOrigin } from './webhook-url';

const log = getLogger('svc.webhooks');

/**
 * Deliveries one process sends at once. A tenant's limits of attempts in flight (at most 7, config.ts) keep some of
 * them for the others, however many of its receivers hang until the time limit.
 */
const CONCURRENCY = 8;
/** The safety net under NOTIFY: the outbox is read at least this often, whatever was heard. */
const POLL_MS = 5000;
/** A claim outlives its attempt's time limit by this much, so that only a dead process loses its rows. */
const LEASE_MARGIN_S = 5;
/** A short pause before reading again when a row is due now but was being claimed elsewhere (no hot loop). */
const MIN_WAIT_MS = 50;
/** What is kept of a redirect's target in an attempt's error (it is shown to the webhook's admins only). */
const MAX_LOCATION_CHARS = 300;
const PRUNE_EVERY_MS = 3600_000;

export interface WebhookDeliveryOptions {
  /** This process, as the holder of the rows it claims. */
  owner: string;
  timeoutS: number;
  maxAttempts: number;
  retryBaseS: number;
  /** Attempts one organisation, and one project, may have in flight at once across the cluster. */
  tenantLimits: InFlightLimits;
  allowPrivateUrls: boolean;
  /** Days an ended delivery is kept; 0: forever. */
  retentionDays: number;
  userAgent: string;
  /** Told of each attempt this process records, for the metrics; none when they are off. */
  observer?: DeliveryObserver;
}

/** What an attempt did to its delivery: delivered it, left it to be tried again, or gave it up as failed. */
export type AttemptOutcome = 'delivered' | 'retried' | 'failed';

export interface DeliveryObserver {
  deliveryAttempted(outcome: AttemptOutcome): void;
}

export class DeliveryTimeoutError extends Error {
  override name = 'DeliveryTimeoutError';
}

interface Answer {
  status: number;
  location: string | undefined;
}

/**
 * The outbox's sender in one process (docs/webhooks.md#delivery-and-retries). Each process runs one; they share the
 * rows through claims in PostgreSQL (FOR UPDATE SKIP LOCKED and a lease), so a delivery is sent by one process at a
 * time, and the row of a process that died is sent again once its lease lapses. It reads the outbox when NOTIFY says
 * a delivery was queued (wake()), when the next retry or lapsed lease falls due, and at least every few seconds.
 */
export class WebhookDelivery {
  private readonly inFlight = new Map<string, AbortController>();
  private readonly sending = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private pruner: NodeJS.Timeout | undefined;
  /** The read under way, which close() lets finish so that what it claims is given back. */
  private reading: Promise<void> | undefined;
  private readAgain = false;
  private closed = false;

  constructor(
    private readonly webhooks: WebhooksRepository,
    private readonly options: WebhookDeliveryOptions,
  ) {}

  start(): void {
    void this.read();
    if (this.options.retentionDays > 0) {
      const prune = () =>
        this.webhooks
          .prune(this.options.retentionDays)
          .then((n) => n > 0 && log.info(`dropped ${n} webhook deliveries ended over retention`))
          .catch((error) => log.warn(`pruning webhook deliveries failed: ${errorMessage(error)}`));
      void prune();
      this.pruner = setInterval(prune, PRUNE_EVERY_MS);
      this.pruner.unref();
    }
  }

  /** A delivery was queued (NOTIFY), or the listener is back after missing notices. */
  wake(): void {
    void this.read();
  }

  /**
   * Stops reading and cuts the attempts under way: their claims are given back without counting, and whichever
   * process reads the outbox next sends them again (with the same webhook-id, so a receiver that got one drops it).
   */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    clearInterval(this.pruner);
    for (const controller of this.inFlight.values()) controller.abort();
    await this.reading;
    await Promise.allSettled([...this.sending]);
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
        const { owner, timeoutS, maxAttempts, tenantLimits } = this.options;
        const claimed = await this.webhooks.claim(owner, timeoutS + LEASE_MARGIN_S, free, maxAttempts, tenantLimits);
        for (const delivery of claimed) this.send(delivery);
        if (claimed.length === free) this.readAgain = true;
      } while (this.readAgain && !this.closed);
      // With every slot taken, a delivery that ends reads again; otherwise wait for the next one due.
      if (this.inFlight.size < CONCURRENCY) {
        const dueS = await this.webhooks.nextDueInS(this.options.tenantLimits);
        if (dueS !== null) waitMs = Math.min(POLL_MS, Math.max(MIN_WAIT_MS, dueS * 1000));
      }
    } catch (error) {
      log.warn(`reading the webhook outbox failed: ${errorMessage(error)}`);
    }
    if (this.closed) return;
    // Woken after the loop had ended: read again at once rather than at the next due time.
    if (this.readAgain) waitMs = 0;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.read(), waitMs);
    this.timer.unref();
  }

  private send(delivery: ClaimedDelivery): void {
    const controller = new AbortController();
    // Claimed while closing: the attempt stops at once and gives the row back.
    if (this.closed) controller.abort();
    this.inFlight.set(delivery.id, controller);
    const sending = this.attempt(delivery, controller.signal)
      .catch((error) => log.warn(`webhook delivery ${delivery.id} could not be recorded: ${errorMessage(error)}`))
      .finally(() => {
        this.inFlight.delete(delivery.id);
        this.sending.delete(sending);
        this.wake();
      });
    this.sending.add(sending);
  }

  /** One attempt, recorded with its time, duration and status or error; a 2xx answer delivers, anything else fails. */
  private async attempt(delivery: ClaimedDelivery, stop: AbortSignal): Promise<void> {
    const { owner, maxAttempts, retryBaseS } = this.options;
    const attemptedAt = new Date();
    const started = performance.now();
    let httpStatus: number | null = null;
    let error: string | null = null;
    // A span of the run's trace, when the event is about a run: its receiver can continue the trace (traceparent).
    const span = tracer().startSpan(
      `webhook ${delivery.event_type}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          [SVC.WEBHOOK_EVENT]: delivery.event_type,
          [SVC.WEBHOOK_ATTEMPT]: delivery.attempt,
          'server.address': webhookOrigin(delivery.url),
        },
      },
      contextOf(delivery.trace_context),
    );
    try {
      const answer = await this.post(delivery, stop, traceHeaders(trace.setSpan(ROOT_CONTEXT, span)));
      httpStatus = answer.status;
      if (answer.status >= 300 && answer.status < 400) {
        const to = answer.location ? ` (to ${answer.location.slice(0, MAX_LOCATION_CHARS)})` : '';
        error = `redirect not followed${to}: answer with 2xx at the registered URL`;
      }
    } catch (failure) {
      if (stop.aborted) {
        span.end();
        await this.webhooks.release(delivery.id, owner);
        return;
      }
      error = errorMessage(failure);
    }
    const delivered = httpStatus !== null && httpStatus >= 200 && httpStatus < 300;
    if (httpStatus !== null) span.setAttribute('http.response.status_code', httpStatus);
    if (!delivered) span.setStatus({ code: SpanStatusCode.ERROR, message: error ?? `HTTP ${httpStatus}` });
    span.end();
    const durationMs = Math.round((performance.now() - started) * 10) / 10;
    const recorded = await this.webhooks.record(
      delivery.id,
      owner,
      { delivered, attemptedAt, durationMs, httpStatus, error },
      { baseS: retryBaseS, maxAttempts },
    );
    // The path and query of a webhook URL often carry a token: log lines name its origin only.
    const where = `webhook ${delivery.webhook_id} delivery ${delivery.id} (${delivery.event_type}) to ${webhookOrigin(delivery.url)}`;
    const outcome = httpStatus !== null ? `HTTP ${httpStatus}` : error;
    if (recorded) this.options.observer?.deliveryAttempted(recorded.status === 'pending' ? 'retried' : recorded.status);
    if (!recorded) log.info(`${where}: attempt ${delivery.attempt} ended after its claim passed to another process`);
    else if (recorded.status === 'delivered') log.info(`${where}: delivered at attempt ${delivery.attempt}`);
    else if (recorded.status === 'failed') log.warn(`${where}: given up after attempt ${delivery.attempt}: ${outcome}`);
    else log.info(`${where}: attempt ${delivery.attempt} failed (${outcome}); it will be tried again`);
  }

  /**
   * POSTs the payload, signed as Standard Webhooks says, within the time limit (connection and answer): to the
   * address the guarded lookup checked, never following a redirect. The answer's body is read and dropped.
   */
  private post(delivery: ClaimedDelivery, stop: AbortSignal, traced: Record<string, string>): Promise<Answer> {
    const { timeoutS, allowPrivateUrls, userAgent } = this.options;
    const url = new URL(delivery.url);
    const rule = webhookAddressRule(allowPrivateUrls);
    checkAddressLiteral(url, rule);
    const sentAt = new Date();
    const body = Buffer.from(delivery.payload);
    const timeout = AbortSignal.timeout(timeoutS * 1000);
    return new Promise<Answer>((resolve, reject) => {
      const request = (url.protocol === 'https:' ? https : http).request(
        url,
        {
          method: 'POST',
          agent: false,
          lookup: guardedLookup(rule),
          signal: AbortSignal.any([stop, timeout]),
          headers: {
            'content-type': 'application/json',
            'content-length': body.length,
            'user-agent': userAgent,
            'webhook-id': delivery.id,
            'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
            'webhook-signature': new Webhook(delivery.secret).sign(delivery.id, sentAt, body),
            ...traced,
          },
        },
        (response) => {
          response.on('error', () => undefined);
          response.resume();
          resolve({ status: response.statusCode ?? 0, location: response.headers.location });
        },
      );
      request.on('error', (error) =>
        reject(timeout.aborted ? new DeliveryTimeoutError(`no answer within ${timeoutS} s`) : error),
      );
      request.end(body);
    });
  }
}
