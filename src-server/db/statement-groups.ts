import { isDatabaseUnavailable } from './pool';

/**
 * Items of many runs written together (checkpoints, run starts, the local queue's joins and leaves), as PostgreSQL
 * commits groups: while `slots` statements are under way, what arrives waits and goes in one statement with whatever
 * else arrived, and each caller gets its own item's result; it goes at once when a slot is free, so a quiet
 * process adds no delay. Each caller learns of its own item: a group refused for a reason of its own (not the database
 * away) is written again item by item, so that only the item the database refuses fails its caller.
 *
 * With hundreds of runs at once, a statement per step of every run kept the pool's connections busy for seconds
 * (each one held for a turn of a busy event loop), and every other statement of a run, its first included, queued
 * behind them.
 */
export class StatementGroups<T, R = void> {
  private waiting: Waiting<T, R>[] = [];
  private underWay = 0;

  constructor(
    /**
     * Writes items in one statement, safe to repeat (idempotent on their keys), and answers each item's result in the
     * items' order (nothing for writes that answer nothing).
     */
    private readonly write: (items: T[]) => Promise<R[] | void>,
    /** Statements under way at once: the most connections of the pool these writes take. */
    private readonly slots: number,
    /** The most items one statement takes. */
    private readonly maxItems: number,
  ) {}

  add(item: T): Promise<R> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
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

  private async send(group: Waiting<T, R>[]): Promise<void> {
    try {
      const results = await this.write(group.map((entry) => entry.item));
      group.forEach((entry, i) => entry.resolve(results?.[i] as R));
    } catch (error) {
      if (group.length === 1 || isDatabaseUnavailable(error)) {
        for (const entry of group) entry.reject(error);
        return;
      }
      for (const entry of group) {
        await this.write([entry.item]).then(
          (results) => entry.resolve(results?.[0] as R),
          (refused: unknown) => entry.reject(refused),
        );
      }
    }
  }
}

interface Waiting<T, R> {
  item: T;
  resolve(result: R): void;
  reject(error: unknown): void;
}
