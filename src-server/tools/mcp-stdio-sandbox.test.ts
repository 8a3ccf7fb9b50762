import { execFile } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probeStdioSandbox } from './mcp-stdio-sandbox';

describe('probeStdioSandbox', () => {
  let refusing: string;
  let empty: string;
  beforeAll(async () => {
    // An unshare as a container without the right to make namespaces has it: it says so and fails.
    refusing = await mkdtemp(path.join(tmpdir(), 'sandbox-probe-'));
    await writeFile(
      path.join(refusing, 'unshare'),
      '#!/bin/sh\necho "unshare: unshare failed: Operation not permitted" >&2\nexit 1\n',
    );
    await chmod(path.join(refusing, 'unshare'), 0o755);
    empty = await mkdtemp(path.join(tmpdir(), 'sandbox-probe-'));
  });
  afterAll(() => Promise.all([refusing, empty].map((d) => rm(d, { recursive: true, force: true }))));

  it('finds a wrapper on this machine, behind which a program sees its own processes only, and has no capabilities', async () => {
    const probe = await probeStdioSandbox(process.env);
    expect(probe).toHaveProperty('wrapper');
    const wrapper = 'wrapper' in probe ? probe.wrapper : [];
    const { stdout } = await promisify(execFile)(wrapper[0]!, [
      ...wrapper.slice(1),
      'sh',
      '-c',
      'ls -d /proc/[0-9]* | wc -l; grep CapEff /proc/self/status',
    ]);
    const [visible, capabilities] = stdout.trim().split('\n');
    expect(Number(visible)).toBeLessThanOrEqual(3);
    expect(capabilities).toMatch(/^CapEff:\s+0+$/);
  });

  it("says why where the machine refuses namespaces, in unshare's own words", async () => {
    expect(await probeStdioSandbox({ PATH: `${refusing}:/usr/bin:/bin` })).toEqual({
      unavailable: 'unshare: unshare failed: Operation not permitted',
    });
  });

  it('says so where unshare is not installed', async () => {
    expect(await probeStdioSandbox({ PATH: empty })).toEqual({ unavailable: 'unshare is not installed' });
  });
});
