import { describe, expect, it } from 'vitest';
import { baseUrl, ConfigError, INSECURE_SESSION_SECRET, isLoopbackHost, loadConfig } from './config';

describe('loadConfig', () => {
  it('applies the defaults of the specification', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      HOST: '127.0.0.1',
      PORT: 8000,
      LOCAL_LLM_BASE: 'http://127.0.0.1:11434',
      LOCAL_LLM_MAX_CONCURRENT: 2,
      LOCAL_LLM_QUEUE_TIMEOUT_S: 300,
      LOCAL_LLM_MAX_CONTEXT_TOKENS: 6000,
      AUTH_ENABLED: true,
      OIDC_CLIENT_ID: 'svc',
      SESSION_SECRET: INSECURE_SESSION_SECRET,
      SESSION_TTL_S: 86400,
      RUN_TIMEOUT_S: 600,
    });
    expect(config.DATABASE_URL).toBeUndefined();
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('parses numbers, booleans and lists', () => {
    const config = loadConfig({
      PORT: '9001',
      AUTH_ENABLED: 'false',
      LOCAL_LLM_QUEUE_TIMEOUT_S: '1.5',
      CORS_ORIGINS: 'http://a.test, http://b.test',
      LOG_LEVEL: 'debug',
    });
    expect(config.PORT).toBe(9001);
    expect(config.AUTH_ENABLED).toBe(false);
    expect(config.LOCAL_LLM_QUEUE_TIMEOUT_S).toBe(1.5);
    expect(config.CORS_ORIGINS).toEqual(['http://a.test', 'http://b.test']);
    expect(config.LOG_LEVEL).toBe('DEBUG');
  });

  it('treats an empty value as unset', () => {
    const config = loadConfig({ PORT: '', DATABASE_URL: '' });
    expect(config.PORT).toBe(8000);
    expect(config.DATABASE_URL).toBeUndefined();
  });

  it('names every variable with a wrong value', () => {
    const attempt = () => loadConfig({ PORT: 'eighty', AUTH_ENABLED: 'maybe', DATABASE_URL: 'not a url' });
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow(/PORT/);
    expect(attempt).toThrow(/AUTH_ENABLED/);
    expect(attempt).toThrow(/DATABASE_URL/);
  });

  it('takes proxy names, addresses and subnets in TRUST_PROXY, and nothing else', () => {
    expect(loadConfig({}).TRUST_PROXY).toEqual(['loopback']);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 192.0.2.7, fd00::/8, uniquelocal' }).TRUST_PROXY).toEqual([
      '10.0.0.0/8',
      '192.0.2.7',
      'fd00::/8',
      'uniquelocal',
    ]);
    for (const wrong of ['true', '10.0.0.0/33', 'proxy.example', '10.0.0.1/8/8']) {
      expect(() => loadConfig({ TRUST_PROXY: wrong }), wrong).toThrow(/TRUST_PROXY/);
    }
  });

  it('rejects a zero concurrency and a short API token', () => {
    expect(() => loadConfig({ LOCAL_LLM_MAX_CONCURRENT: '0' })).toThrow(/LOCAL_LLM_MAX_CONCURRENT/);
    expect(() => loadConfig({ SVC_API_TOKEN: 'short' })).toThrow(/SVC_API_TOKEN/);
  });
});

describe('baseUrl', () => {
  it('uses a loopback address when listening on every interface', () => {
    expect(baseUrl({ HOST: '0.0.0.0', PORT: 8000 })).toBe('http://127.0.0.1:8000');
    expect(baseUrl({ HOST: '::1', PORT: 80 })).toBe('http://[::1]:80');
  });
});

describe('isLoopbackHost', () => {
  it('accepts exactly localhost, IPv4 literals in 127.0.0.0/8 and ::1', () => {
    for (const host of ['localhost', 'LocalHost', '127.0.0.1', '127.255.0.9', '::1', '[::1]', '0:0:0:0:0:0:0:1']) {
      expect(isLoopbackHost(host), host).toBe(true);
    }
  });

  it('refuses names that only start like a loopback address, and every other address', () => {
    for (const host of [
      '127.0.0.1.evil.example',
      '127.evil.example',
      'localhost.evil.example',
      '127.1',
      '0127.0.0.1',
      '::ffff:127.0.0.1',
      '10.0.0.1',
      '0.0.0.0',
      '::',
      '[::2]',
      '',
    ]) {
      expect(isLoopbackHost(host), host).toBe(false);
    }
  });
});
