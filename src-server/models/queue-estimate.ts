/**
 * When each waiter of the local-runtime queue can expect its slot, from where the calls holding slots are: the queued
 * banner's estimated wait. A call that has held its slot for `h` seconds, against an average call of `a`, is expected
 * to hold it `max(a − h, h)` more: the rest of an average call while it is young, and as long again once it has run
 * past half of one, so that a long call ahead is never reported as about to end. Each slot that frees goes to the next
 * waiter, whose call is taken to last the average.
 *
 * Returns the estimates for positions 1 … `positions`, in seconds.
 */
export function estimateWaits(positions: number, slots: number, heldS: readonly number[], averageS: number): number[] {
  const frees = new MinHeap();
  for (const held of heldS.slice(0, slots)) frees.push(Math.max(averageS - held, held));
  for (let free = heldS.length; free < slots; free++) frees.push(0);
  const waits: number[] = [];
  while (waits.length < positions && frees.size > 0) {
    const at = frees.pop();
    waits.push(at);
    frees.push(at + averageS);
  }
  return waits;
}

/** Enough of a binary heap for the simulation above: hundreds of waiters over as many slots stay cheap. */
class MinHeap {
  private readonly items: number[] = [];

  get size(): number {
    return this.items.length;
  }

  push(value: number): void {
    const items = this.items;
    items.push(value);
    for (let i = items.length - 1; i > 0;) {
      const parent = (i - 1) >> 1;
      if (items[parent]! <= items[i]!) break;
      [items[parent], items[i]] = [items[i]!, items[parent]!];
      i = parent;
    }
  }

  pop(): number {
    const items = this.items;
    const top = items[0]!;
    const last = items.pop()!;
    if (items.length > 0) {
      items[0] = last;
      for (let i = 0; ;) {
        const left = 2 * i + 1;
        const right = left + 1;
        let least = i;
        if (left < items.length && items[left]! < items[least]!) least = left;
        if (right < items.length && items[right]! < items[least]!) least = right;
        if (least === i) break;
        [items[least], items[i]] = [items[i]!, items[least]!];
        i = least;
      }
    }
    return top;
  }
}
