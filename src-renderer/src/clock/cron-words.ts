import cronstrue from 'cronstrue';

/**
 * What a schedule is usually made from: most people never write a cron. Each preset fills the cron field, which stays
 * the one place the schedule's times are written (a preset is not stored: a cron that is one reads as it again).
 */
export const CRON_PRESETS = [
  { label: 'Every 5 minutes', cron: '*/5 * * * *' },
  { label: 'Every 15 minutes', cron: '*/15 * * * *' },
  { label: 'Every hour', cron: '0 * * * *' },
  { label: 'Every day at 09:00', cron: '0 9 * * *' },
  { label: 'Every weekday at 09:00', cron: '0 9 * * 1-5' },
  { label: 'Every Monday at 09:00', cron: '0 9 * * 1' },
  { label: 'On the first of every month at 09:00', cron: '0 9 1 * *' },
] as const;

/** The preset a cron is, if it is one. */
export function presetOf(cron: string): (typeof CRON_PRESETS)[number] | undefined {
  const written = cron.trim().split(/\s+/).join(' ');
  return CRON_PRESETS.find((preset) => preset.cron === written);
}

/**
 * A cron in plain words on the studio's 24-hour clock ("At 09:00, Monday through Friday"), or null when it is none:
 * the server's answer then says what is wrong with it.
 */
export function cronInWords(cron: string): string | null {
  const written = cron.trim();
  if (!written) return null;
  try {
    return cronstrue.toString(written, { use24HourTimeFormat: true, throwExceptionOnParseError: true });
  } catch {
    return null;
  }
}
