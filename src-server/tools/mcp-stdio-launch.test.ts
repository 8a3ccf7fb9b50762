import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_INHERITED_ENV_VARS } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpServerError } from './mcp-server-error';
import { stdioLaunch, type StdioMcpServer } from './mcp-stdio-launch';

const server = (over: Partial<StdioMcpServer> = {}): StdioMcpServer => ({
  name: 'tool',
  transport: 'stdio',
  command: 'mcp-tool',
  args: [],
  env: [],
  ...over,
});
const env = { PATH: '/usr/bin', HOME: '/home/svc', SESSION_SECRET: 'never', TOKEN: 't' };

describe('stdioLaunch', () => {
  let bin: string;
  let other: string;
  beforeAll(async () => {
    bin = await mkdtemp(path.join(tmpdir(), 'mcp-bin-'));
    other = await mkdtemp(path.join(tmpdir(), 'mcp-bin-'));
    await writeFile(path.join(bin, 'mcp-tool'), '#!/bin/sh\n');
    await chmod(path.join(bin, 'mcp-tool'), 0o755);
    await writeFile(path.join(other, 'mcp-tool'), 'not executable');
  });
  afterAll(() => Promise.all([bin, other].map((d) => rm(d, { recursive: true, force: true }))));

  it('finds a bare command in the first bin folder that holds it as an executable file', async () => {
    const launch = await stdioLaunch(server(), null, {
      env,
      binDirs: [other, bin],
      inherited: DEFAULT_INHERITED_ENV_VARS,
    });
    expect(launch.command).toBe(path.join(bin, 'mcp-tool'));
  });

  it('leaves a command it does not find, or a path, to the spawn', async () => {
    expect(
      (
        await stdioLaunch(server({ command: 'elsewhere' }), null, {
          env,
          binDirs: [bin],
          inherited: DEFAULT_INHERITED_ENV_VARS,
        })
      ).command,
    ).toBe('elsewhere');
    expect(
      (
        await stdioLaunch(server({ command: './mcp-tool' }), null, {
          env,
          binDirs: [bin],
          inherited: DEFAULT_INHERITED_ENV_VARS,
        })
      ).command,
    ).toBe('./mcp-tool');
  });

  it('puts the project folder into the arguments and runs there; without one, in the temporary folder', async () => {
    const withFolder = await stdioLaunch(server({ args: ['--root={project_path}', '-v'] }), '/srv/p', {
      env,
      binDirs: [],
      inherited: DEFAULT_INHERITED_ENV_VARS,
    });
    expect(withFolder.args).toEqual(['--root=/srv/p', '-v']);
    expect(withFolder.cwd).toBe('/srv/p');
    expect((await stdioLaunch(server(), null, { env, binDirs: [], inherited: DEFAULT_INHERITED_ENV_VARS })).cwd).toBe(
      tmpdir(),
    );
  });

  it('gives the process PATH, HOME, LANG when set and the variables it names, nothing else', async () => {
    const launch = await stdioLaunch(server({ env: ['TOKEN'] }), null, {
      env,
      binDirs: [],
      inherited: DEFAULT_INHERITED_ENV_VARS,
    });
    const given = Object.fromEntries(Object.entries(launch.env).filter(([, value]) => value !== undefined));
    expect(given).toEqual({ PATH: '/usr/bin', HOME: '/home/svc', TOKEN: 't' });
  });

  it('refuses a declaration whose variables are unset, naming them and no value', async () => {
    const refused = stdioLaunch(server({ env: ['TOKEN', 'API_KEY', 'OTHER'] }), null, {
      env,
      binDirs: [],
      inherited: DEFAULT_INHERITED_ENV_VARS,
    });
    await expect(refused).rejects.toBeInstanceOf(McpServerError);
    await expect(refused).rejects.toThrow(
      'MCP server "tool" needs the environment variables API_KEY, OTHER, which the service\'s environment does not set',
    );
  });
});
