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
  ['64:ff9b:1::', 48], // local-use NAT64
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated, still routed by some)
  ['ff00::', 8], // multicast
] as const) {
  INTERNAL.addSubnet(net, bits, 'ipv6');
}

/** The IPv4 address an IPv6 address carries by translation (NAT64 64:ff9b::/96, 6to4 2002::/16, ::/96), if any. */
function embeddedIpv4(address: string): string | undefined {
  const groups = expandIpv6(address);
  if (!groups) return undefined;
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  if (groups[0] === 0x64 && groups[1] === 0xff9b && groups.slice(2, 6).every((g) => g === 0)) {
    return v4(groups[6]!, groups[7]!);
  }
  if (groups[0] === 0x2002) return v4(groups[1]!, groups[2]!);
  if (groups.slice(0, 6).every((g) => g === 0)) return v4(groups[6]!, groups[7]!);
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
 * an IPv6 one included (`::ffff:127.0.0.1`, NAT64, 6to4): what a clone or a webhook must not reach on the server's
 * network. Anything that is not an address at all counts as internal, so that a caller's mistake refuses.
 */
export function isInternalAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return INTERNAL.check(address, 'ipv4');
  if (family !== 6) return true;
  if (INTERNAL.check(address, 'ipv6')) return true;
  const inner = embeddedIpv4(address);
  return inner !== undefined && INTERNAL.check(inner, 'ipv4');
}
