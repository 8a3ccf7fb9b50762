import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { StdioServerParameters } from '@modelcontextprotocol/sdk/client/stdio.js';
import { PROJECT_PATH_PLACEHOLDER, type McpServer } from '../contracts/tools';
import { McpServerError } from './mcp-server-error';

export type StdioMcpServer = Extract<McpServer, { transport: 'stdio' }>;

/** What every stdio server gets from the service's environment besides the variables it names. */
const BASE_VARIABLES = ['PATH', 'HOME', 'LANG'];

/**
 * How a declared stdio server is started: its command found, `{project_path}` put into its arguments, and an
 * environment of PATH, HOME, LANG (from the service's) and the variables it names (their values resolved by the
 * caller: a project or organisation secret, else the service's environment), nothing else (the service's own secrets
 * stay out), behind `wrapper` (the confinement of mcp-stdio-sandbox.ts; none where servers run unconfined). It runs in
 * the project folder, or in the temporary folder when the run has none.
 */
export async function stdioLaunch(
  server: StdioMcpServer,
  projectPath: string | null,
  options: {
    /** The service's environment: PATH, HOME and LANG are read here, and nothing else. */
    env: Readonly<Record<string, string | undefined>>;
    /** The value of each variable the declaration names (`server.env`); undefined: nothing sets it. */
    variables: Readonly<Record<string, string | undefined>>;
    binDirs: readonly string[];
    /** The variables the SDK's transport passes on by itself (its DEFAULT_INHERITED_ENV_VARS), to leave out. */
    inherited: readonly string[];
    /** The command line the server's own is put behind; empty: none. */
    wrapper: readonly string[];
  },
): Promise<StdioServerParameters & { env: Record<string, string>; cwd: string }> {
  const args = server.args.map((arg) => {
    if (!arg.includes(PROJECT_PATH_PLACEHOLDER)) return arg;
    if (projectPath === null) {
      throw new McpServerError(
        `MCP server "${server.name}" needs the run's project folder (${PROJECT_PATH_PLACEHOLDER} in its arguments), ` +
          'and this run has none',
      );
    }
    return arg.split(PROJECT_PATH_PLACEHOLDER).join(projectPath);
  });
  const env = childEnvironment(server, options.env, options.variables, options.inherited);
  const command = await findCommand(server, options.binDirs, env.PATH);
  const cwd = projectPath ?? tmpdir();
  const [wrapper, ...wrapperArgs] = options.wrapper;
  if (wrapper === undefined) return { command, args, env, cwd };
  return { command: wrapper, args: [...wrapperArgs, command, ...args], env, cwd };
}

function childEnvironment(
  server: StdioMcpServer,
  env: Readonly<Record<string, string | undefined>>,
  variables: Readonly<Record<string, string | undefined>>,
  inherited: readonly string[],
) {
  const missing = server.env.filter((name) => variables[name] === undefined);
  if (missing.length) {
    const many = missing.length > 1;
    throw new McpServerError(
      `MCP server "${server.name}" needs the environment variable${many ? 's' : ''} ${missing.join(', ')}, which ` +
        `nothing sets: set ${many ? 'each' : 'it'} as a project or organisation secret, or in the service's environment`,
    );
  }
  const child: Record<string, string> = {};
  // The SDK adds its own list of the service's variables (USER, SHELL, ...) under the ones given: each is named here
  // without a value, which the spawn leaves out, so only the variables chosen here reach the server.
  for (const name of inherited) child[name] = undefined as unknown as string;
  for (const name of BASE_VARIABLES) {
    const value = env[name];
    if (value !== undefined) child[name] = value;
  }
  for (const name of server.env) child[name] = variables[name]!;
  return child;
}

/**
 * A bare command name is looked for in `binDirs` first (the service's own node_modules/.bin, where the MCP servers it
 * ships are), then on the server's PATH, as the spawn would: here, so that a command that is nowhere is said so, and
 * not left to the wrapper's exit. A path is left as it is.
 */
async function findCommand(server: StdioMcpServer, binDirs: readonly string[], PATH = ''): Promise<string> {
  const { command } = server;
  if (/[\\/]/.test(command)) return command;
  const names = process.platform === 'win32' ? [`${command}.cmd`, `${command}.exe`, command] : [command];
  for (const dir of [...binDirs, ...PATH.split(path.delimiter).filter(Boolean)]) {
    for (const name of names) {
      const candidate = path.join(dir, name);
      if (await isExecutableFile(candidate)) return candidate;
    }
  }
  throw new McpServerError(
    `MCP server "${server.name}" could not be started: its command ${command} is in neither the service's ` +
      'node_modules/.bin nor its PATH',
  );
}

async function isExecutableFile(file: string): Promise<boolean> {
  try {
    await access(file, constants.X_OK);
    return (await stat(file)).isFile();
  } catch {
    return false;
  }
}
