import { formatSseFrame, TERMINAL_EVENTS, type RunEvent, type RunEventType } from '../../contracts/events';
import type { StoredEvent } from '../../storage/types';

/** Events after which a run's stream says nothing more: its end. A gate's wait is an end only while it waits. */
export const RUN_ENDING_EVENTS: readonly RunEventType[] = TERMINAL_EVENTS.filter(
  (type) => type !== 'gate_waiting' && type !== 'tool_waiting',
);

/** An event with its per-run id, serialised once however many clients follow it, and stored as it was sent. */
export class LoggedEvent {
  private cached?: string;

  constructor(
    readonly id: number,
    readonly type: RunEventType,
    /** The JSON text of the event, exactly as clients receive it and as it is stored. */
    readonly data: string,
  ) {}

  static of(id: number, event: RunEvent): LoggedEvent {
    return new LoggedEvent(id, event.type, JSON.stringify(event));
  }

  static stored(row: StoredEvent): LoggedEvent {
    return new LoggedEvent(row.seq, row.type as RunEventType, row.data);
  }

  /** The event's SSE frame (contracts/events.ts formatSseFrame), made once. */
  get frame(): string {
    return (this.cached ??= formatSseFrame(this.id, this.type, this.data));
  }

  /** The run ended with it, or stopped at a gate. */
  get terminal(): boolean {
    return TERMINAL_EVENTS.includes(this.type);
  }
}
