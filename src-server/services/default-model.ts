import type { InstanceSettingsRepository } from '../db/instance-settings.repository';
import { errorMessage } from '../contracts/errors';
import { getLogger } from '../log';

const log = getLogger('svc.api');
const KEY = 'default_model';
/** How soon a default chosen on another process is seen here. */
const REFRESH_MS = 10_000;

/**
 * The model a run uses when neither it nor its thread names one: DEFAULT_MODEL, unless someone chose another in the
 * studio's Models view, which every process reads (a new default is seen here at once, on others within 10 s).
 * Read synchronously on the run path: no query per run.
 */
export class DefaultModel {
  private chosen: string | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly fromEnvironment: string,
    private readonly settings: InstanceSettingsRepository,
  ) {}

  current(): string {
    return this.chosen ?? this.fromEnvironment;
  }

  async start(): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), REFRESH_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  async set(model: string, by: string): Promise<void> {
    await this.settings.set(KEY, model, by);
    this.chosen = model;
    log.info(`default model set to ${model} by ${by}`);
  }

  private async refresh(): Promise<void> {
    try {
      this.chosen = await this.settings.get(KEY);
    } catch (error) {
      log.warn(`reading the default model failed: ${errorMessage(error)}`);
    }
  }
}
