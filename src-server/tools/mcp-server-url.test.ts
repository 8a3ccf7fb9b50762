import { describe, expect, it } from 'vitest';
import { McpServerError } from './mcp-server-error';
import { checkMcpServerUrl } from './mcp-server-url';

const check = (url: string, allowed: string[] = []) =>
  checkMcpServerUrl('remote', url, allowed, new AbortController().signal);

describe('checkMcpServerUrl', () => {
  it('accepts an http(s) URL on a public address', async () => {
    expect((await check('https://93.184.216.34/mcp?key=k')).href).toBe('https://93.184.216.34/mcp?key=k');
  });

  it.each([
    ['ftp://93.184.216.34/mcp', /must be http or https, not ftp/],
    ['not a url', /not a valid absolute URL/],
    ['https://user:pw@93.184.216.34/mcp', /carries a user name or password/],
  ])('refuses %s', async (url, message) => {
    const refused = check(url);
    await expect(refused).rejects.toBeInstanceOf(McpServerError);
    await expect(refused).rejects.toThrow(message);
  });

  it.each([
    'http://127.0.0.1:8080/mcp',
    'http://10.1.2.3/mcp',
    'http://[::1]/mcp',
    'http://[::ffff:169.254.169.254]/',
    'http://localhost/mcp',
  ])("refuses %s, on the server's own network, without showing its path", async (url) => {
    const refused = check(`${url}?token=secret-token`);
    await expect(refused).rejects.toThrow(/own network/);
    await expect(refused).rejects.not.toThrow(/secret-token/);
  });

  it('accepts a private host the allowed hosts name, in any case, IPv6 with or without brackets', async () => {
    await expect(check('http://127.0.0.1:8080/mcp', ['127.0.0.1'])).resolves.toBeInstanceOf(URL);
    await expect(check('http://LocalHost/mcp', ['localhost'])).resolves.toBeInstanceOf(URL);
    await expect(check('http://[::1]/mcp', ['[::1]'])).resolves.toBeInstanceOf(URL);
    await expect(check('http://[::1]/mcp', ['::1'])).resolves.toBeInstanceOf(URL);
    await expect(check('http://10.0.0.1/mcp', ['127.0.0.1'])).rejects.toThrow(/own network/);
  });

  it('refuses a host that does not resolve', async () => {
    await expect(check('https://no-such-host.invalid/mcp')).rejects.toThrow(
      /no-such-host.invalid could not be resolved/,
    );
  });
});
