import { describe, expect, it } from 'vitest';
import { useIntegrationServer } from '../helpers/integration';

// The shipped assets and no model: the pages' headers are all this file reads (security-headers.int.system.test.ts
// opens the pages in Chromium under them).
const ctx = useIntegrationServer({ model: false, catalog: false, server: { AUTH_ENABLED: 'true' } });

const policyOf = (res: Response) =>
  Object.fromEntries(
    (res.headers.get('content-security-policy') ?? '')
      .split(';')
      .map((part) => part.trim().split(/\s+/))
      .filter(([name]) => name)
      .map(([name, ...values]) => [name!, values]),
  );

describe('security headers', () => {
  it.each(['/', '/docs', '/ui', '/ui/threads/x', '/ui/assets/nope.js', '/health', '/openapi.json', '/agents', '/nope'])(
    '%s: no framing, no sniffing, no referrer, and a content policy',
    async (path) => {
      const res = await fetch(`${ctx.server.url}${path}`);
      await res.arrayBuffer();
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
      const policy = policyOf(res);
      expect(policy['frame-ancestors']).toEqual(["'none'"]);
      expect(policy['object-src']).toEqual(["'none'"]);
      expect(policy['default-src']?.length).toBeGreaterThan(0);
      expect(res.headers.get('content-security-policy')).not.toContain('unsafe-');
    },
  );

  it('gives each page the narrowest policy: nothing for the API, its own files for the studio and the docs', async () => {
    expect(policyOf(await fetch(`${ctx.server.url}/health`))['default-src']).toEqual(["'none'"]);
    const portal = policyOf(await fetch(`${ctx.server.url}/`));
    expect(portal['default-src']).toEqual(["'none'"]);
    expect(portal['script-src']).toEqual([expect.stringMatching(/^'sha256-[\w+/]+=*'$/)]);
    expect(portal['style-src']).toEqual([expect.stringMatching(/^'sha256-[\w+/]+=*'$/)]);
    const docs = policyOf(await fetch(`${ctx.server.url}/docs`));
    expect(docs['default-src']).toEqual(["'self'"]);
    expect(docs['script-src']).toEqual(["'self'", expect.stringMatching(/^'sha256-/)]);
    const studio = policyOf(await fetch(`${ctx.server.url}/ui`));
    expect(studio['default-src']).toEqual(["'self'"]);
    expect(studio['script-src']).toBeUndefined();
  });
});
