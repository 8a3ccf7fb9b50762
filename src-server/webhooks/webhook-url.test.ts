import { describe, expect, it } from 'vitest';
import { ServiceError } from '../contracts/errors';
import { checkAddressLiteral, guardedLookup, InternalAddressError } from '../net/guarded-lookup';
import { checkWebhookUrl, webhookAddressRule, webhookOrigin } from './webhook-url';

const refusal = async (url: string, allowPrivate = false): Promise<string | undefined> => {
  try {
    await checkWebhookUrl(url, { allowPrivate });
    return undefined;
  } catch (error) {
    if (!(error instanceof ServiceError)) throw error;
    expect(error.status).toBe(400);
    return error.message;
  }
};

describe('webhook URLs at registration', () => {
  it('refuse loopback, link-local, private and unspecified addresses, written in any form', async () => {
    for (const url of [
      'http://127.0.0.1:8080/hook',
      'http://127.9.9.9/',
      'http://localhost:3000/hook',
      'http://LOCALHOST./hook',
      'http://api.localhost/hook',
      'http://[::1]/hook',
      'http://[::ffff:127.0.0.1]/hook',
      'http://[::ffff:0:7f00:1]/hook',
      'http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hook',
      'http://2130706433/hook',
      'http://0x7f.1/hook',
      'http://0.0.0.0/',
      'http://169.254.169.254/latest/meta-data/',
      'http://10.1.2.3/',
      'http://172.16.0.1/',
      'http://192.168.0.10/',
      'http://100.64.0.1/',
      'http://[fd00::1]/',
      'http://[fe80::1]/',
    ]) {
      const message = await refusal(url);
      expect(message, url).toMatch(/^invalid request body: url: .+ is on the server's own network/);
      expect(message, url).toContain('WEBHOOK_ALLOW_PRIVATE_URLS=true');
    }
  });

  it('take those addresses when WEBHOOK_ALLOW_PRIVATE_URLS allows them, and public addresses always', async () => {
    expect(await refusal('http://127.0.0.1:8080/hook', true)).toBeUndefined();
    expect(await refusal('http://localhost/hook', true)).toBeUndefined();
    expect(await refusal('https://93.184.216.34/hook')).toBeUndefined();
    expect(await refusal('https://[2606:4700::1111]/hook')).toBeUndefined();
    // A name that does not resolve now is checked again when a delivery is sent.
    expect(await refusal('https://hooks.invalid/x')).toBeUndefined();
  });

  it('refuse other schemes and credentials, whatever the setting', async () => {
    for (const allow of [false, true]) {
      expect(await refusal('ftp://93.184.216.34/x', allow)).toBe(
        'invalid request body: url: must be an http or https URL, not ftp',
      );
      expect(await refusal('file:///etc/passwd', allow)).toMatch(/must be an http or https URL, not file/);
      expect(await refusal('/relative/path', allow)).toBe('invalid request body: url: not a valid absolute URL');
      expect(await refusal('https://user:s3cret@93.184.216.34/x', allow)).toMatch(/must not carry a user name/);
      expect(await refusal('https://token@93.184.216.34/x', allow)).toMatch(/must not carry a user name/);
    }
  });

  it('say which field is wrong in details, as validation errors do', async () => {
    await expect(checkWebhookUrl('http://127.0.0.1/', { allowPrivate: false })).rejects.toMatchObject({
      details: { fields: [{ field: 'url', message: expect.stringContaining("server's own network") }] },
    });
  });

  it('show only the origin in log lines: a path or query may carry a token', () => {
    expect(webhookOrigin('https://hooks.example.com/services/T000/B000/XXXX?token=abc')).toBe(
      'https://hooks.example.com',
    );
  });
});

describe('webhook addresses at delivery', () => {
  it('refuse a name on the server itself, or an address literal there, saying what allows it', async () => {
    const refused = await new Promise<Error | null>((resolve) =>
      guardedLookup(webhookAddressRule(false))('localhost', {}, (error) => resolve(error)),
    );
    expect(refused).toBeInstanceOf(InternalAddressError);
    expect(refused?.message).toBe(
      "localhost resolves to an address on the server's own network (loopback, link-local or private): not sent " +
        '(WEBHOOK_ALLOW_PRIVATE_URLS=true allows it)',
    );
    expect(() => checkAddressLiteral(new URL('http://127.0.0.1:9/'), webhookAddressRule(false))).toThrow(
      InternalAddressError,
    );
    expect(() => checkAddressLiteral(new URL('http://127.0.0.1:9/'), webhookAddressRule(true))).not.toThrow();
  });
});
