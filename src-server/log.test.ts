import { afterEach, describe, expect, it } from 'vitest';
import { captureLogs, getLogger, registerSecret, setLogLevel } from './log';

describe('log lines', () => {
  const lines: string[] = [];
  const restore = captureLogs((line) => lines.push(line));
  afterEach(() => {
    lines.length = 0;
    setLogLevel('INFO');
  });
  process.on('exit', restore);

  it('are `<ISO timestamp> <LEVEL> <logger> <message>`', () => {
    getLogger('svc.api').info('graph run start agent=a');
    expect(lines[0]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z INFO svc\.api graph run start agent=a\n$/);
  });

  it('hide DEBUG unless LOG_LEVEL=DEBUG', () => {
    const log = getLogger('svc.sse');
    log.debug('hidden');
    setLogLevel('DEBUG');
    log.debug('shown');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('DEBUG svc.sse shown');
  });

  it('carry the traceback after an error message', () => {
    getLogger('svc.sse').error('stream failed', new TypeError('boom'));
    expect(lines[0]).toMatch(/ERROR svc\.sse stream failed\nTypeError: boom\n\s+at /);
  });

  it('cannot be forged by user text: control characters in a message are escaped, one call is one line', () => {
    const forged = 'looks good\r\n2026-01-01T00:00:00.000Z INFO svc.api gate approved by admin';
    getLogger('svc.api').info(`run cancelled: ${forged}\u2028\u0007`);
    expect(lines).toHaveLength(1);
    expect(lines[0]!.split('\n')).toEqual([expect.any(String), '']);
    expect(lines[0]).toContain('run cancelled: looks good\\r\\n2026-01-01T00:00:00.000Z INFO svc.api gate approved');
    expect(lines[0]).toContain('\\u2028\\u0007');
  });

  it('keep the traceback readable, its lines indented, while an error message cannot add lines', () => {
    getLogger('svc.sse').error('run failed', new Error('model "x\n2026-01-01T00:00:00.000Z ERROR svc.api forged"'));
    const [first, second, ...frames] = lines[0]!.trimEnd().split('\n');
    expect(first).toMatch(/ERROR svc\.sse run failed$/);
    expect(second).toBe('Error: model "x\\n2026-01-01T00:00:00.000Z ERROR svc.api forged"');
    expect(frames.length).toBeGreaterThan(0);
    for (const frame of frames) expect(frame).toMatch(/^\s+at /);
  });

  it('never contain a registered secret', () => {
    registerSecret('sk-very-secret-value');
    getLogger('svc.models').warn('calling with key sk-very-secret-value failed');
    expect(lines[0]).not.toContain('sk-very-secret-value');
    expect(lines[0]).toContain('key *** failed');
  });

  it('never contain a personal access token, which is recognised by its form', () => {
    const token = `svcpat_${'A1b2_-'.repeat(7)}x`;
    getLogger('svc.api').warn(`refused Authorization: Bearer ${token}.`);
    expect(lines[0]).not.toContain(token);
    expect(lines[0]).toContain('Bearer svcpat_***.');
  });

  it("never contain an MCP client's access or refresh token, recognised by its form", () => {
    const random = `${'A1b2_-'.repeat(7)}x`;
    getLogger('svc.auth').warn(`tokens svcoat_${random} and svcort_${random} seen`);
    expect(lines[0]).not.toContain(random);
    expect(lines[0]).toContain('tokens svcoat_*** and svcort_*** seen');
  });
});
