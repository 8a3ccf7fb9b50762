import { BlockList, isIP } from 'node:net';

/*
 * The addresses of the server's own network, which nothing a user names may reach from the server: a git clone
 * (context/git-url.ts) and a webhook delivery (webhooks/) both check with this, so that one list says what "own
 * network" means. It imports only Node, so that any service may use it.
 */

const INTERNAL = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata services
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  INTERNAL.addSubnet(net, bits, 'ipv4');
}
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  // Teredo (RFC 4380) carries two IPv4 addresses, its server's and its client's (bits inverted), and a relay on the
  // server's network delivers to the client's. Teredo is obsolete (operating systems have turned it off): refusing
  // all of it loses no git host nor webhook receiver, where reading both addresses out would be one more parser.
  ['2001::', 32],
  ['2001:2::', 48], // benchmarking, as 198.18.0.0/15
  // Local-use NAT64 (RFC 8215): the network's own translator, and where the IPv4 address sits depends on the prefix
  // length it was given (RFC 6052), so it cannot be read out reliably: all of it is internal.
  ['64:ff9b:1::', 48],
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated, still routed by some)
  ['ff00::', 8], // multicast
] as const) {
  INTERNAL.addSubnet(net, bits, 'ipv6');
}

/**
 * The IPv4 address an IPv6 address carries, in the forms where the network may deliver it to that IPv4 address:
 * these are checked as IPv4. (An IPv4-mapped address, ::ffff:a.b.c.d, is checked so by the BlockList itself.) Where
 * the embedded address is public, the IPv6 address is as public as it: these forms are refused only for what they
 * carry, not wholesale, as 6to4 and NAT64 still serve public hosts. A NAT64 prefix of a network's own choosing (other
 * than 64:ff9b::/96) cannot be known here; docs/security.md says so.
 */
function embeddedIpv4(address: string): string | undefined {
  const groups = expandIpv6(address);
  if (!groups) return undefined;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const zero = (from: number, to: number) => groups.slice(from, to).every((g) => g === 0);
  const last = v4(groups[6]!, groups[7]!);
  // NAT64, the well-known prefix 64:ff9b::/96 (RFC 6052).
  if (groups[0] === 0x64 && groups[1] === 0xff9b && zero(2, 6)) return last;
  // 6to4, 2002:a.b.c.d::/48 (RFC 3056): its relay sends to a.b.c.d.
  if (groups[0] === 0x2002) return v4(groups[1]!, groups[2]!);
  // IPv4-compatible ::a.b.c.d (deprecated, RFC 4291) and IPv4-translated ::ffff:0:a.b.c.d (SIIT, RFC 2765).
  if (zero(0, 6) || (zero(0, 4) && groups[4] === 0xffff && groups[5] === 0)) return last;
  // ISATAP, any prefix with the interface identifier 0:5efe:a.b.c.d or 200:5efe:a.b.c.d (RFC 5214): a host on an
  // ISATAP link sends to a.b.c.d over IPv4.
  if ((groups[4] === 0 || groups[4] === 0x200) && groups[5] === 0x5efe) return last;
  return undefined;
}

function expandIpv6(address: string): number[] | undefined {
  let text = address.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, -dotted[1]!.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const parts = (s: string) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const left = parts(head);
  const right = tail === undefined ? [] : parts(tail);
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill(0), ...right];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
}

/**
 * Loopback, link-local, private, shared, multicast and reserved addresses, IPv4 and IPv6, an IPv4 address inside
 * an IPv6 one included (`::ffff:127.0.0.1`, `::ffff:0:7f00:1`, NAT64, 6to4, ISATAP) and all of Teredo: what a clone
 * or a webhook must not reach on the server's network. Anything that is not an address at all counts as internal,
 * so that a caller's mistake refuses.
 */
export function isInternalAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return INTERNAL.check(address, 'ipv4');
  if (family !== 6) return true;
  if (INTERNAL.check(address, 'ipv6')) return true;
  const inner = embeddedIpv4(address);
  return inner !== undefined && INTERNAL.check(inner, 'ipv4');
}
