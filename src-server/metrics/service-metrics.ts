import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { QueueStatus } from '../contracts/models';
import type { NodeStatus } from '../contracts/runs';
import { errorMessage } from '../contracts/errors';
import type { ClusterFigures } from '../db/metrics.repository';
import type { LegOutcome, RunObserver } from '../engine';
import { getLogger } from '../log';
import type { CallUsage } from '../models/model-client';
import type { ModelCallObserver, ModelCallOutcome } from '../models/observed-model-client';
import type { AttemptOutcome, DeliveryObserver } from '../webhooks/webhook-delivery';
import type { ModelLabels } from './model-labels';

const log = getLogger('svc.api');

/** Said first in the help of every series read from PostgreSQL, which every process reports alike. */
const CLUSTER = 'Cluster-wide, read from PostgreSQL at each scrape: every process reports the same value, do not sum.';

/** Seconds: a phase or a model call takes from a few milliseconds (a stand-in) to minutes (a local model on a CPU). */
const CALL_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
/** Seconds: a leg runs up to RUN_TIMEOUT_S (600 by default). */
const LEG_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
/** Seconds: a local call waits for a slot up to LOCAL_LLM_QUEUE_TIMEOUT_S (300 by default). */
const WAIT_BUCKETS = [0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** Where the metrics read what they do not count themselves; each read happens at a scrape. */
export interface MetricsSources {
  /** The agents and commands of the catalog: each has its runs-in-progress series, at 0 when none runs. */
  agents(): string[];
  /** The cluster's runs in progress, waiting approvals and pending deliveries: one statement. */
  cluster(): Promise<ClusterFigures>;
  /** The local-runtime queue's status: one statement. */
  queue(): Promise<QueueStatus>;
  /** This process's legs and its events not yet stored (Engine.load). */
  load(): { active: number; waiting: number; eventBacklog: number };
}

let processRegistry: Registry | undefined;

/**
 * Node's own process metrics (CPU, memory, event loop lag, garbage collection): one set per process, however many
 * servers it starts (the desktop app restarts its server in place), since their collectors run for the process's life.
 */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/**
 * The metrics of one server (docs/observability.md): what this process observes as it works (legs, phases, model
 * calls, streams, webhook attempts), counted as it happens with a few additions each, and what the cluster holds in
 * PostgreSQL, read at each scrape. A scrape reads the database once for both of its statements, however many
 * scrapers ask at once.
 */
export class ServiceMetrics implements RunObserver, ModelCallObserver, DeliveryObserver {
  readonly contentType = Registry.PROMETHEUS_CONTENT_TYPE;
  private readonly registry = new Registry();
  /** The series read from PostgreSQL, each set in a registry of its own: left out of a scrape whose read failed. */
  private readonly clusterRegistry = new Registry();
  private readonly queueRegistry = new Registry();
  private openStreams = 0;
  private scraping?: Promise<string>;
  private clusterFailing = false;

  private readonly legDuration: Histogram<'agent' | 'outcome'>;
  private readonly phaseDuration: Histogram<'agent' | 'phase' | 'status'>;
  private readonly callDuration: Histogram<'provider' | 'model' | 'outcome'>;
  private readonly tokens: Counter<'provider' | 'model' | 'type'>;
  private readonly queueWait: Histogram;
  private readonly attempts: Counter<'outcome'>;
  private readonly runsInProgress: Gauge<'agent' | 'status'>;
  private readonly gatesWaiting: Gauge;
  private readonly oldestGate: Gauge;
  private readonly queueWaiting: Gauge;
  private readonly queueActive: Gauge;
  private readonly queueSlots: Gauge;
  private readonly deliveriesPending: Gauge;
  private readonly oldestDelivery: Gauge;
  private readonly clusterRead: Gauge;
  private readonly clusterReadSeconds: Gauge;

  constructor(
    private readonly sources: MetricsSources,
    private readonly labels: ModelLabels,
  ) {
    const registers = [this.registry];
    const load = () => sources.load();
    const streams = () => this.openStreams;

    this.legDuration = new Histogram({
      name: 'svc_run_leg_duration_seconds',
      help:
        'Legs of runs this process executed, by how they ended, from their start here to their end (the wait for a ' +
        'place included). The _count of completed, rejected, error and cancelled counts runs finished.',
      labelNames: ['agent', 'outcome'],
      buckets: LEG_BUCKETS,
      registers,
    });
    this.phaseDuration = new Histogram({
      name: 'svc_phase_duration_seconds',
      help: 'Phases (llm nodes) this process executed, from their entry to their end, by the status they ended with.',
      labelNames: ['agent', 'phase', 'status'],
      buckets: CALL_BUCKETS,
      registers,
    });
    this.callDuration = new Histogram({
      name: 'svc_model_call_duration_seconds',
      help:
        "Model calls this process made, from the call to its answer's end, less the wait for a local-runtime slot. " +
        'model is "other" for a model not in the catalog.',
      labelNames: ['provider', 'model', 'outcome'],
      buckets: CALL_BUCKETS,
      registers,
    });
    this.tokens = new Counter({
      name: 'svc_model_tokens_total',
      help: 'Tokens of the model calls this process made, as the runtime or provider counted them: type is input or output.',
      labelNames: ['provider', 'model', 'type'],
      registers,
    });
    this.queueWait = new Histogram({
      name: 'svc_local_queue_wait_seconds',
      help: "This process's local-runtime calls: how long each waited for a slot.",
      buckets: WAIT_BUCKETS,
      registers,
    });
    this.attempts = new Counter({
      name: 'svc_webhook_attempts_total',
      help:
        'Webhook delivery attempts this process recorded, by what each did to its delivery: delivered it, left it to ' +
        'be tried again (retried), or gave it up (failed).',
      labelNames: ['outcome'],
      registers,
    });
    for (const outcome of ['delivered', 'retried', 'failed'] satisfies AttemptOutcome[])
      this.attempts.inc({ outcome }, 0);
    new Gauge({
      name: 'svc_sse_streams_open',
      help: 'Run event streams this process is sending now.',
      registers,
      collect() {
        this.set(streams());
      },
    });
    new Gauge({
      name: 'svc_run_events_unstored',
      help: 'Run events this process published and has not yet stored (its batch writer behind the database).',
      registers,
      collect() {
        this.set(load().eventBacklog);
      },
    });
    new Gauge({
      name: 'svc_run_legs',
      help: 'Legs of runs in this process: active (executing) or waiting for a place (RUN_MAX_ACTIVE).',
      labelNames: ['state'],
      registers,
      collect() {
        const { active, waiting } = load();
        this.set({ state: 'active' }, active);
        this.set({ state: 'waiting' }, waiting);
      },
    });

    const cluster = [this.clusterRegistry];
    this.runsInProgress = new Gauge({
      name: 'svc_runs_in_progress',
      help: `${CLUSTER} Runs not finished, by agent and status: running, or waiting_approval (at a gate or a tool call that asks).`,
      labelNames: ['agent', 'status'],
      registers: cluster,
    });
    this.gatesWaiting = new Gauge({
      name: 'svc_gates_waiting',
      help: `${CLUSTER} Runs waiting for a person's decision, at a gate or at a tool call that asks.`,
      registers: cluster,
    });
    this.oldestGate = new Gauge({
      name: 'svc_gate_oldest_wait_seconds',
      help: `${CLUSTER} How long the longest-waiting of them has waited; 0 when none waits.`,
      registers: cluster,
    });
    const queue = [this.queueRegistry];
    this.queueWaiting = new Gauge({
      name: 'svc_local_queue_waiting_calls',
      help: `${CLUSTER} Local-runtime calls waiting for a slot.`,
      registers: queue,
    });
    this.queueActive = new Gauge({
      name: 'svc_local_queue_active_calls',
      help: `${CLUSTER} Local-runtime calls holding a slot.`,
      registers: queue,
    });
    this.queueSlots = new Gauge({
      name: 'svc_local_queue_slots',
      help: 'Slots of the local-runtime queue, LOCAL_LLM_MAX_CONCURRENT as this process has it (the same on every process).',
      registers: queue,
    });
    this.deliveriesPending = new Gauge({
      name: 'svc_webhook_deliveries_pending',
      help: `${CLUSTER} Webhook deliveries waiting to be sent or tried again.`,
      registers: cluster,
    });
    this.oldestDelivery = new Gauge({
      name: 'svc_webhook_oldest_pending_seconds',
      help: `${CLUSTER} Age of the oldest pending webhook delivery; 0 when none is pending.`,
      registers: cluster,
    });
    this.clusterRead = new Gauge({
      name: 'svc_cluster_read_success',
      help: 'Whether this scrape read the cluster-wide series from PostgreSQL (1), or could not (0: they are left out).',
      registers,
    });
    this.clusterReadSeconds = new Gauge({
      name: 'svc_cluster_read_duration_seconds',
      help: "How long this scrape's reads of PostgreSQL took.",
      registers,
    });
  }

  legEnded(agent: string, outcome: LegOutcome, seconds: number): void {
    this.legDuration.observe({ agent, outcome }, seconds);
  }

  phaseEnded(agent: string, phase: string, status: NodeStatus, seconds: number): void {
    this.phaseDuration.observe({ agent, phase, status }, seconds);
  }

  modelCallEnded(model: string, outcome: ModelCallOutcome, seconds: number, usage: CallUsage | undefined): void {
    const { provider, model: name } = this.labels.label(model);
    this.callDuration.observe({ provider, model: name, outcome }, seconds);
    if (usage?.prompt_tokens) this.tokens.inc({ provider, model: name, type: 'input' }, usage.prompt_tokens);
    if (usage?.output_tokens) this.tokens.inc({ provider, model: name, type: 'output' }, usage.output_tokens);
    if (typeof usage?.queue_wait_ms === 'number') this.queueWait.observe(usage.queue_wait_ms / 1000);
  }

  deliveryAttempted(outcome: AttemptOutcome): void {
    this.attempts.inc({ outcome });
  }

  streamOpened(): void {
    this.openStreams++;
  }

  streamClosed(): void {
    this.openStreams--;
  }

  /** The text of a scrape (Prometheus's text format); scrapes that ask at once share one. */
  scrape(): Promise<string> {
    this.scraping ??= this.collect().finally(() => {
      this.scraping = undefined;
    });
    return this.scraping;
  }

  private async collect(): Promise<string> {
    const began = performance.now();
    const [cluster, queue] = await Promise.allSettled([this.sources.cluster(), this.sources.queue()]);
    this.clusterReadSeconds.set((performance.now() - began) / 1000);
    const registries = [processMetrics(), this.registry];
    if (cluster.status === 'fulfilled') registries.push(this.showCluster(cluster.value));
    if (queue.status === 'fulfilled') registries.push(this.showQueue(queue.value));
    const failed = [cluster, queue].find((read) => read.status === 'rejected');
    this.clusterRead.set(failed ? 0 : 1);
    if (failed && !this.clusterFailing) {
      log.warn(`metrics: reading the cluster's figures failed, served without them: ${errorMessage(failed.reason)}`);
    }
    this.clusterFailing = Boolean(failed);
    return (await Promise.all(registries.map((registry) => registry.metrics()))).join('\n');
  }

  private showCluster(figures: ClusterFigures): Registry {
    // Set afresh: an agent no longer in the catalog leaves once its last run ends; the catalog's stay, at 0.
    this.runsInProgress.reset();
    for (const agent of this.sources.agents()) {
      this.runsInProgress.set({ agent, status: 'running' }, 0);
      this.runsInProgress.set({ agent, status: 'waiting_approval' }, 0);
    }
    let waiting = 0;
    for (const { agent, status, runs } of figures.runs) {
      this.runsInProgress.set({ agent, status }, runs);
      if (status === 'waiting_approval') waiting += runs;
    }
    this.gatesWaiting.set(waiting);
    this.oldestGate.set(figures.oldest_gate_s ?? 0);
    this.deliveriesPending.set(figures.deliveries_pending);
    this.oldestDelivery.set(figures.oldest_delivery_s ?? 0);
    return this.clusterRegistry;
  }

  private showQueue(queue: QueueStatus): Registry {
    this.queueWaiting.set(queue.waiting);
    this.queueActive.set(queue.active);
    this.queueSlots.set(queue.slots);
    return this.queueRegistry;
  }
}
