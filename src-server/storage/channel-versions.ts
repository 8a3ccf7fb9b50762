/**
 * The next version of a checkpoint channel, unique on its thread even when the thread branches.
 *
 * A checkpointer stores each channel's value once per (thread, channel, version), first write wins. LangGraph's stock
 * versions count 1, 2, 3… per channel, so a run that continues from an older checkpoint (a fork) gives its new values
 * version numbers the thread's later checkpoints already used: their old values would be read back instead. Each new
 * version here is the next whole number plus a random fraction: still increasing, still a plain number (so versions
 * written before compare as they did), and unique on the thread.
 */
export function nextChannelVersion(current: number | undefined): number {
  const next = (typeof current === 'number' ? Math.floor(current) : 0) + 1;
  // A fraction of at most nine decimals, never zero (a whole number could be a version the stock saver wrote): the
  // number prints as exactly those decimals, in JavaScript (the blob's key) and from PostgreSQL's JSON (the lookup).
  const fraction = String(1 + Math.floor(Math.random() * (1e9 - 1))).padStart(9, '0');
  return Number(`${next}.${fraction}`);
}
