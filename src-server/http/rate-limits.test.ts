import { describe, expect, it } from 'vitest';
import { limitsOf } from './rate-limits';

describe('request limits', () => {
  it('default to 1,200 a minute per token and 120 per address with authentication on, none with it off', () => {
    expect(limitsOf({ AUTH_ENABLED: true })).toEqual({ perToken: 1200, perAddress: 120 });
    expect(limitsOf({ AUTH_ENABLED: false })).toEqual({ perToken: 0, perAddress: 0 });
    expect(limitsOf({ AUTH_ENABLED: false, RATE_LIMIT_PER_MINUTE: 30 })).toEqual({ perToken: 30, perAddress: 0 });
    expect(limitsOf({ AUTH_ENABLED: true, RATE_LIMIT_PER_MINUTE: 0, RATE_LIMIT_ADDRESS_PER_MINUTE: 5 })).toEqual({
      perToken: 0,
      perAddress: 5,
    });
  });
});
