import { describe, expect, it } from 'vitest';
import { isInternalAddress } from './internal-address';

describe('internal addresses', () => {
  it('tell internal addresses from public ones, IPv4 inside IPv6 in every form included', () => {
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
      '64:ff9b::127.0.0.1',
      '64:ff9b:1::808:808', // local-use NAT64: all of it, whatever it carries
      '2002:c0a8:101::1',
      '2002:a9fe:a9fe::1', // 6to4 of 169.254.169.254
      '::ffff:0:7f00:1', // IPv4-translated (SIIT) 127.0.0.1
      '::ffff:0:127.0.0.1',
      '::ffff:0:a00:1',
      '::ffff:0:c0a8:101',
      '::a00:1', // IPv4-compatible 10.0.0.1
      '2001:0:4136:e378:8000:63bf:3fff:fdd2', // Teredo, whatever its addresses
      '2001::1',
      '2001:2::1', // benchmarking
      '2001:db8:1:2::5efe:a00:1', // ISATAP of 10.0.0.1
      '2001:db8:1:2:200:5efe:c0a8:101', // ISATAP of 192.168.1.1
      'not an address',
      '',
    ]) {
      expect(isInternalAddress(address), address).toBe(true);
    }
    for (const address of [
      '93.184.216.34',
      '140.82.121.4',
      '2606:4700::1111',
      '2001:4860:4860::8888', // beside Teredo's 2001::/32, not in it
      '::ffff:93.184.216.34',
      '::ffff:0:5db8:d822', // IPv4-translated 93.184.216.34
      '64:ff9b::8.8.8.8', // NAT64 of a public address
      '2002:808:808::1', // 6to4 of a public address
      '2001:db8:1:2:200:5efe:808:808', // ISATAP of a public address
    ]) {
      expect(isInternalAddress(address), address).toBe(false);
    }
  });
});
