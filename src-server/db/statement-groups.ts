import { isDatabaseUnavailable } from './pool';

/**
 * Items of many runs written together, as PostgreSQL commits groups: while `slots` statements are under way, what
 * arrives waits and goes in one statement with whatever else arrived; it goes at once when a slot is free, so a quiet
 * process adds no delay. Each caller learns of its own item: a group refused for a reason of its own (not the database
 * away) is written again item by item, so that only the item the database refuses fails its caller.
 *
 * With hundreds of runs at once, a statement per step of every run kept the pool's connections busy for seconds
 * (each one held for a turn of a busy event loop), and every other statement of a run, its first included, queued
 * behind them.
 */
export class StatementGroups<T> {
  private waiting: { item: T; settle(error?: unknown): void }[] = [];
  private underWay = 0;

  constructor(
    /** Writes items in one statement; safe to repeat (idempotent on their keys). */
    private readonly write: (items: T[]) => Promise<void>,
    /** Statements under way at once: the most connections of the pool these writes take. */
    private readonly slots: number,
    /** The most items one statement takes. */
    private readonly maxItems: number,
  ) {}

  add(item: T): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ item, settle: (error) => (error === undefined ? resolve() : reject(error)) });
      this.next();
    });
  }

  private next(): void {
    while (this.underWay < this.slots && this.waiting.length > 0) {
      const group = this.waiting.splice(0, this.maxItems);
      this.underWay++;
      void this.send(group).finally(() => {
        this.underWay--;
        this.next();
      });
    }
  }

  private async send(group: { item: T; settle(error?: unknown): void }[]): Promise<void> {
    try {
      await this.write(group.map((entry) => entry.item));
      for (const entry of group) entry.settle();
    } catch (error) {
      if (group.length === 1 || isDatabaseUnavailable(error)) {
        for (const entry of group) entry.settle(error);
        return;
      }
      for (const entry of group) {
        await this.write([entry.item]).then(
          () => entry.settle(),
          (refused: unknown) => entry.settle(refused),
        );
      }
    }
  }
}
