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

  const launch = (
    declared: StdioMcpServer,
    options: {
      binDirs?: string[];
      projectPath?: string;
      wrapper?: string[];
      env?: Record<string, string>;
      variables?: Record<string, string | undefined>;
    } = {},
  ) =>
    stdioLaunch(declared, options.projectPath ?? null, {
      env: options.env ?? env,
      variables: options.variables ?? { TOKEN: 't' },
      binDirs: options.binDirs ?? [],
      inherited: DEFAULT_INHERITED_ENV_VARS,
      wrapper: options.wrapper ?? [],
    });

  it('finds a bare command in the first bin folder that holds it as an executable file, then on PATH', async () => {
    expect((await launch(server(), { binDirs: [other, bin] })).command).toBe(path.join(bin, 'mcp-tool'));
    expect((await launch(server({ command: 'sh' }), { binDirs: [bin] })).command).toMatch(/^\/(usr\/)?bin\/sh$/);
    expect((await launch(server(), { binDirs: [other], env: { ...env, PATH: `/nowhere:${bin}` } })).command).toBe(
      path.join(bin, 'mcp-tool'),
    );
  });

  it('refuses a bare command found nowhere, and leaves a path to the spawn', async () => {
    const nowhere = launch(server({ command: 'elsewhere' }), { binDirs: [bin] });
    await expect(nowhere).rejects.toBeInstanceOf(McpServerError);
    await expect(nowhere).rejects.toThrow(
      'MCP server "tool" could not be started: its command elsewhere is in neither the service\'s node_modules/.bin ' +
        'nor its PATH',
    );
    expect((await launch(server({ command: './mcp-tool' }), { binDirs: [bin] })).command).toBe('./mcp-tool');
  });

  it('puts the command behind the wrapper, its arguments after it', async () => {
    const wrapped = await launch(server({ args: ['--root={project_path}'] }), {
      binDirs: [bin],
      projectPath: '/srv/p',
      wrapper: ['unshare', '--pid', '--'],
    });
    expect(wrapped.command).toBe('unshare');
    expect(wrapped.args).toEqual(['--pid', '--', path.join(bin, 'mcp-tool'), '--root=/srv/p']);
    expect(wrapped.cwd).toBe('/srv/p');
  });

  it('puts the project folder into the arguments and runs there; without one, in the temporary folder', async () => {
    const withFolder = await launch(server({ args: ['--root={project_path}', '-v'] }), {
      binDirs: [bin],
      projectPath: '/srv/p',
    });
    expect(withFolder.args).toEqual(['--root=/srv/p', '-v']);
    expect(withFolder.cwd).toBe('/srv/p');
    expect((await launch(server(), { binDirs: [bin] })).cwd).toBe(tmpdir());
  });

  it('gives the process PATH, HOME, LANG when set and the variables it names, nothing else', async () => {
    const launched = await launch(server({ env: ['TOKEN'] }), { binDirs: [bin] });
    const given = Object.fromEntries(Object.entries(launched.env).filter(([, value]) => value !== undefined));
    expect(given).toEqual({ PATH: '/usr/bin', HOME: '/home/svc', TOKEN: 't' });
  });

  it("takes the named variables' values as given (a secret), not from the service's environment", async () => {
    const launched = await launch(server({ env: ['TOKEN'] }), {
      binDirs: [bin],
      variables: { TOKEN: 'from-a-project-secret' },
    });
    expect(launched.env.TOKEN).toBe('from-a-project-secret');
    // A variable of the service's environment the declaration does not name stays out, even when given.
    const unnamed = await launch(server(), { binDirs: [bin], variables: { TOKEN: 'from-a-project-secret' } });
    expect(unnamed.env.TOKEN).toBeUndefined();
  });

  it('refuses a declaration whose variables are unset, naming them and no value', async () => {
    const refused = launch(server({ env: ['TOKEN', 'API_KEY', 'OTHER'] }), { binDirs: [bin] });
    await expect(refused).rejects.toBeInstanceOf(McpServerError);
    await expect(refused).rejects.toThrow(
      'MCP server "tool" needs the environment variables API_KEY, OTHER, which nothing sets: set each as a project ' +
        "or organisation secret, or in the service's environment",
    );
    const one = launch(server({ env: ['API_KEY'] }), { binDirs: [bin] });
    await expect(one).rejects.toThrow(
      'MCP server "tool" needs the environment variable API_KEY, which nothing sets: set it as a project or ' +
        "organisation secret, or in the service's environment",
    );
  });
});
