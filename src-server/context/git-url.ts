import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { ProjectPathError } from './errors';

/** https, ssh (`ssh://` or `git@host:path`), git and file URLs are cloned; anything else is a local folder. */
export function isGitUrl(value: string): boolean {
  return /^(https?|ssh|git|file):\/\//i.test(value) || SCP_LIKE.test(value);
}

/** git's scp-like form, `user@host:path`. */
const SCP_LIKE = /^([\w.-]+)@([\w.-]+):/;

export interface GitUrl {
  scheme: 'http' | 'https' | 'ssh' | 'git';
  /** The host as the URL names it (IPv6 without brackets). */
  host: string;
  /** The port git connects to. */
  port: number;
  /** The URL to hand to git: the parser's own serialisation, so that git reads the same host this check read. */
  href: string;
  /** The URL fit to show: without credentials. */
  shown: string;
}

const DEFAULT_PORTS: Record<GitUrl['scheme'], number> = { http: 80, https: 443, ssh: 22, git: 9418 };

/** A URL fit to show in an answer or a log line: any user name and password removed. */
export function withoutCredentials(value: string): string {
  const scp = SCP_LIKE.exec(value);
  if (scp) return value.slice(scp[1]!.length + 1);
  try {
    const url = new URL(value);
    url.username = '';
    url.password = '';
    return url.href;
  } catch {
    return value.replace(/\/\/[^/@]*@/, '//');
  }
}

/**
 * Parses a network git URL (not file://) and refuses credentials in it: they would be stored in thread and run
 * rows, shown to every viewer of the project, logged, and kept in the clone's .git/config. An ssh user name, as in
 * `git@host:team/repo.git`, is not a credential (the key is); any user name in an http(s) URL is (a token is
 * often passed as one).
 */
export function parseGitUrl(value: string): GitUrl {
  const scp = SCP_LIKE.exec(value);
  if (scp) {
    const host = scp[2]!;
    return { scheme: 'ssh', host, port: 22, href: value, shown: withoutCredentials(value) };
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ProjectPathError(`project path ${withoutCredentials(value)} is not a valid git URL`);
  }
  const scheme = url.protocol.slice(0, -1).toLowerCase() as GitUrl['scheme'];
  const shown = withoutCredentials(value);
  if (url.password || (url.username && scheme !== 'ssh')) {
    throw new ProjectPathError(
      `git URL ${shown} carries credentials, which would be stored and shown with the thread: give the URL ` +
        'without them, and let the server authenticate (a git credential helper or an SSH key of its own user)',
    );
  }
  if (!url.hostname) throw new ProjectPathError(`git URL ${shown} names no host`);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return { scheme, host, port: Number(url.port) || DEFAULT_PORTS[scheme], href: url.href, shown };
}

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
 * an IPv6 one included (`::ffff:127.0.0.1`, NAT64, 6to4): what a clone must not reach on the server's network.
 */
export function isInternalAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return INTERNAL.check(address, 'ipv4');
  if (family !== 6) return true;
  if (INTERNAL.check(address, 'ipv6')) return true;
  const inner = embeddedIpv4(address);
  return inner !== undefined && INTERNAL.check(inner, 'ipv4');
}

export interface ResolvedHost {
  /** Every address the host resolved to, all of them checked. */
  addresses: string[];
}

/**
 * Resolves the URL's host as git would (getaddrinfo, /etc/hosts included) and refuses it when any address is on
 * the server's own network, unless GIT_ALLOWED_HOSTS names the host. The addresses returned are the ones git must
 * then use, so that a second, different DNS answer cannot move the clone elsewhere.
 */
export async function resolvePublicHost(url: GitUrl, allowedHosts: readonly string[]): Promise<ResolvedHost> {
  const allowed = allowedHosts.some((h) => h.toLowerCase().replace(/^\[(.*)\]$/, '$1') === url.host.toLowerCase());
  let addresses: string[];
  if (isIP(url.host)) addresses = [url.host];
  else {
    try {
      addresses = (await lookup(url.host, { all: true, verbatim: true })).map((a) => a.address);
    } catch {
      throw new ProjectPathError(`could not clone ${url.shown}`);
    }
  }
  if (!allowed && addresses.some(isInternalAddress)) {
    throw new ProjectPathError(
      `git URL ${url.shown} leads to an address on the server's own network (loopback, link-local or private), ` +
        `which is not cloned: GIT_ALLOWED_HOSTS can allow ${url.host}`,
    );
  }
  return { addresses };
}
