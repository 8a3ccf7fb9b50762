import type { lookup, LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { McpServerError } from './mcp-server-error';
import { checkMcpServerUrl } from './mcp-server-url';

const check = (url: string, allowed: string[] = []) =>
  checkMcpServerUrl('remote', url, allowed, new AbortController().signal);

/** A resolver that answers `addresses` for any name, as DNS would. */
const answering = (...addresses: string[]) =>
  ((_host: string, _options: object, callback: (error: null, found: LookupAddress[]) => void) =>
    callback(
      null,
      addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
    )) as unknown as typeof lookup;

describe('checkMcpServerUrl', () => {
  it('accepts an http(s) URL on a public address', async () => {
    const checked = await check('https://93.184.216.34/mcp?key=k');
    expect(checked.url.href).toBe('https://93.184.216.34/mcp?key=k');
    expect(checked.addresses).toEqual([{ address: '93.184.216.34', family: 4 }]);
  });

  it('checks every address a name has, and gives those as where its connections go', async () => {
    const signal = new AbortController().signal;
    const both = answering('93.184.216.34', '2606:4700::1111');
    expect((await checkMcpServerUrl('remote', 'https://mcp.example/mcp', [], signal, both)).addresses).toEqual([
      { address: '93.184.216.34', family: 4 },
      { address: '2606:4700::1111', family: 6 },
    ]);
    const oneInside = answering('93.184.216.34', '10.0.0.7');
    await expect(checkMcpServerUrl('remote', 'https://mcp.example/mcp', [], signal, oneInside)).rejects.toThrow(
      /"remote": https:\/\/mcp\.example leads to an address on the server's own network/,
    );
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
    await expect(check('http://127.0.0.1:8080/mcp', ['127.0.0.1'])).resolves.toMatchObject({ url: expect.any(URL) });
    await expect(check('http://LocalHost/mcp', ['localhost'])).resolves.toMatchObject({ url: expect.any(URL) });
    await expect(check('http://[::1]/mcp', ['[::1]'])).resolves.toMatchObject({ url: expect.any(URL) });
    await expect(check('http://[::1]/mcp', ['::1'])).resolves.toMatchObject({ url: expect.any(URL) });
    await expect(check('http://10.0.0.1/mcp', ['127.0.0.1'])).rejects.toThrow(/own network/);
  });

  it('refuses a host that does not resolve', async () => {
    await expect(check('https://no-such-host.invalid/mcp')).rejects.toThrow(
      /no-such-host.invalid could not be resolved/,
    );
  });
});
