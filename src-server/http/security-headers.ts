import { createHash } from 'node:crypto';
import type { RequestHandler } from 'express';
import helmet, { contentSecurityPolicy } from 'helmet';

type Directives = Record<string, string[]>;

/** What every policy says, whatever the page: nobody frames it, no plugin runs, no <base> moves its links. */
const ALWAYS: Directives = { frameAncestors: ["'none'"], objectSrc: ["'none'"], baseUri: ["'none'"] };

/**
 * The headers of every answer. JSON, streams and files need no content policy at all, so the default one allows
 * nothing; a page sets its own with pagePolicy(). No Strict-Transport-Security: the server is often reached over
 * plain HTTP on loopback, and behind a proxy the header belongs to the proxy that terminates TLS for the domain.
 */
export function securityHeaders(): RequestHandler {
  return helmet({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: { ...ALWAYS, defaultSrc: ["'none'"], formAction: ["'none'"] },
    },
    xFrameOptions: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
    strictTransportSecurity: false,
  });
}

/** A page's own Content-Security-Policy, in place of the one that allows nothing. */
export function pagePolicy(directives: Directives): RequestHandler {
  return contentSecurityPolicy({
    useDefaults: false,
    directives: { ...ALWAYS, formAction: ["'none'"], ...directives },
  });
}

/** The CSP source that allows exactly this inline <script> or <style> text, and nothing else inline. */
export function inlineHash(text: string): string {
  return `'sha256-${createHash('sha256').update(text).digest('base64')}'`;
}
