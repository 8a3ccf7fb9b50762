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

  it('never contain a registered secret', () => {
    registerSecret('sk-very-secret-value');
    getLogger('svc.models').warn('calling with key sk-very-secret-value failed');
    expect(lines[0]).not.toContain('sk-very-secret-value');
    expect(lines[0]).toContain('key *** failed');
  });
});
