import { describe, expect, it } from 'vitest';
import { isInternalAddress } from './internal-address';

describe('internal addresses', () => {
  it('tell internal addresses from public ones, IPv4 inside IPv6 included', () => {
    for (const address of [
      '127.0.0.1',
      '127.1.2.3',
      '10.2.3.4',
      '172.20.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '::',
      'fd00::1',
      'fc12:3456::1',
      'fe80::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:10.0.0.1',
      '::ffff:169.254.169.254',
      '64:ff9b::a00:1',
      '2002:c0a8:101::1',
      'not an address',
      '',
    ]) {
      expect(isInternalAddress(address), address).toBe(true);
    }
    for (const address of ['93.184.216.34', '140.82.121.4', '2606:4700::1111', '::ffff:93.184.216.34']) {
      expect(isInternalAddress(address), address).toBe(false);
    }
  });
});
