import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { isInternalAddress } from '../net/internal-address';
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
