/** What a publish step's arguments may name, filled in for the run that publishes. */
export interface PublishContext {
  runId: string;
  threadId: string;
  /** What the thread is called (its first message unless renamed). */
  threadName: string;
}

/** A file name's part from a title: at most this many characters, so that a path stays readable in a listing. */
const MAX_SLUG = 60;

/**
 * A title as a file name's part: lower case ASCII letters and digits joined by single dashes ("Fix the login
 * redirect (#42)" gives "fix-the-login-redirect-42"), accents dropped, cut at a dash within 60 characters. A title
 * with nothing left ("???", only emoji or CJK) gives "untitled". Never "." or "..", never a slash: it stays one name.
 */
export function titleSlug(title: string): string {
  const words = title
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  if (!words) return 'untitled';
  if (words.length <= MAX_SLUG) return words;
  const cut = words.slice(0, MAX_SLUG + 1);
  const lastDash = cut.lastIndexOf('-');
  return (lastDash > 0 ? cut.slice(0, lastDash) : cut.slice(0, MAX_SLUG)).replace(/-+$/, '');
}

/**
 * A publish argument with its placeholders filled: `{run_id}`, `{thread_id}`, `{thread_title}` (the thread's name as a
 * slug, see titleSlug) and `{short_id}` (the run id's first eight characters, which tell two runs of one title apart).
 */
export function fillPublishArgument(value: string, context: PublishContext): string {
  return value
    .replaceAll('{run_id}', context.runId)
    .replaceAll('{thread_id}', context.threadId)
    .replaceAll('{thread_title}', titleSlug(context.threadName))
    .replaceAll('{short_id}', context.runId.replaceAll('-', '').slice(0, 8));
}
