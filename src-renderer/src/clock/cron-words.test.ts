import { describe, expect, it } from 'vitest';
import { CRON_PRESETS, cronInWords, presetOf } from './cron-words';

describe('a cron in plain words', () => {
  it('reads each preset, and a cron written by hand, on a 24-hour clock', () => {
    expect(CRON_PRESETS.map((preset) => cronInWords(preset.cron))).toEqual([
      'Every 5 minutes',
      'Every 15 minutes',
      'Every hour',
      'At 09:00',
      'At 09:00, Monday through Friday',
      'At 09:00, only on Monday',
      'At 09:00, on day 1 of the month',
    ]);
    expect(cronInWords('30 14 * * 1,3')).toBe('At 14:30, only on Monday and Wednesday');
  });

  it('reads nothing from what is not a cron, and knows a preset however it is spaced', () => {
    expect(cronInWords('every 5 minutes')).toBeNull();
    expect(cronInWords('')).toBeNull();
    expect(presetOf(' 0 9  * * 1-5 ')?.label).toBe('Every weekday at 09:00');
    expect(presetOf('0 10 * * 1-5')).toBeUndefined();
  });
});
