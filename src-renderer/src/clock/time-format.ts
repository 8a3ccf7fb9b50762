/**
 * The studio's one way of saying when something happened: relative ("3 min ago") on screen, with the absolute date
 * and time for a title. How long something has lasted ("waiting 12 s") uses formatSpan (stores/gate-decision.ts).
 */
export function relativeTime(iso: string, now = Date.now()): string {
  const s = Math.round((now - Date.parse(iso)) / 1000);
  if (s < 45) return 'just now';
  const min = Math.round(s / 60);
  if (min < 60) return `${min} min ago`;
  const h = Math.round(min / 60);
  if (h < 24) return `${h} h ago`;
  const d = Math.round(h / 24);
  if (d < 30) return d === 1 ? 'yesterday' : `${d} days ago`;
  return new Date(iso).toLocaleDateString(undefined, { dateStyle: 'medium' });
}

/** The date and time in full, for a title beside a relative time. */
export function absoluteTime(iso: string): string {
  return new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}
