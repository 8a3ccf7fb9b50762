import { execFile } from 'node:child_process';
import { getLogger } from '../log';

const log = getLogger('svc.mcp');

/**
 * How stdio MCP servers run on this server, decided once at start (docs/security.md#stdio-mcp-servers): confined
 * behind `wrapper`, unconfined (the desktop, with a warning in the studio's Settings), or not at all (a shared server).
 */
export type StdioServers =
  { mode: 'confined'; wrapper: readonly string[] } | { mode: 'unconfined' } | { mode: 'refused'; reason: string };

/** What the probe found: the command line a server's own is put behind, or why this machine has none. */
export type SandboxProbe = { wrapper: readonly string[] } | { unavailable: string };

/**
 * A PID namespace of the server's own with a /proc of its own: it sees its own processes only, so it reads the
 * environment of no process of the service, nor of the service's parents (npm, a shell), which keep theirs. The file
 * system is the service's: the project folder, node and the other programs stay where they are. When the server (PID 1
 * there) ends, the kernel ends every process it started; when unshare is killed, --kill-child kills the server.
 */
const PID_NAMESPACE = ['--pid', '--fork', '--mount-proc', '--kill-child'];

/**
 * As root, the server would keep every capability inside the namespace, enough to unmount its /proc and see the one
 * beneath: it gets none. A server of another user has none there already.
 */
const NO_CAPABILITIES = ['setpriv', '--bounding-set=-all', '--inh-caps=-all', '--'];

/** How long the probe waits for `true` to run behind a wrapper. */
const PROBE_TIMEOUT_MS = 10_000;

/**
 * Tries the wrappers this machine may allow, each around `true`: a PID namespace (needs root, or CAP_SYS_ADMIN), then
 * one inside a user namespace of the service's user (needs unprivileged user namespaces). The first that runs is
 * the one every stdio server is started behind.
 */
export async function probeStdioSandbox(env: Readonly<Record<string, string | undefined>>): Promise<SandboxProbe> {
  if (process.platform !== 'linux') {
    return { unavailable: `confinement uses Linux namespaces, which ${process.platform} does not have` };
  }
  const drop = process.getuid?.() === 0 ? NO_CAPABILITIES : [];
  let unavailable = '';
  for (const namespaces of [PID_NAMESPACE, ['--user', '--map-current-user', ...PID_NAMESPACE]]) {
    const wrapper = ['unshare', ...namespaces, '--', ...drop];
    const failure = await runs([...wrapper, 'true'], env);
    if (failure === null) return { wrapper };
    unavailable = failure;
  }
  return { unavailable };
}

/** Null when the command ran and exited 0; otherwise what went wrong, in the command's own words where it has some. */
function runs(command: string[], env: Readonly<Record<string, string | undefined>>): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(
      command[0]!,
      command.slice(1),
      { env: { PATH: env.PATH }, timeout: PROBE_TIMEOUT_MS },
      (error, _stdout, stderr) => {
        if (!error) return resolve(null);
        const said = stderr.trim().split('\n').at(-1);
        if (said) return resolve(said);
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return resolve(`${command[0]} is not installed`);
        resolve(error.killed ? `${command[0]} did not finish within ${PROBE_TIMEOUT_MS} ms` : error.message);
      },
    );
  });
}

/**
 * Where the machine cannot confine them, stdio servers are refused on a shared server (`shared`: sign-in on, by OIDC or
 * a fixed SVC_API_TOKEN, and not the desktop app), whose users are not the machine's owner; on the desktop and with a
 * per-launch token, the one person using the service is, and they run unconfined with a warning. Says once, in the
 * log, what was decided.
 */
export function stdioServersOf(probe: SandboxProbe, shared: boolean): StdioServers {
  if ('wrapper' in probe) {
    log.info(`stdio MCP servers run confined: ${probe.wrapper.join(' ')} <command>`);
    return { mode: 'confined', wrapper: probe.wrapper };
  }
  if (shared) {
    const reason =
      'on a server where people sign in, a stdio MCP server runs only in a PID namespace of its own (so that it ' +
      "cannot read the environment, and the secrets, of the service's processes), and this machine does not let the " +
      `service make one (${probe.unavailable}): allow unprivileged user namespaces or run the service as root, or ` +
      'reach the server over http';
    log.warn(`stdio MCP servers are refused: ${reason}`);
    return { mode: 'refused', reason };
  }
  log.warn(
    `this machine does not let the service give a stdio MCP server a PID namespace of its own (${probe.unavailable}): ` +
      "stdio MCP servers run unconfined, and can read the environment, and the secrets, of the service's processes; " +
      "the studio's Settings say so",
  );
  return { mode: 'unconfined' };
}
