import v8 from 'node:v8';
import { ConfigError, loadConfig } from './config';
import { getLogger } from './log';
import { startServer, type RunningServer } from './main';
import { errorMessage } from './contracts/errors';
import { isBackupCommand, runBackupCommand } from './backup-cli';

/** Headless entry point: `npm start` and `npm run serve`. */
const log = getLogger('svc.api');

// The old generation grows by half before a full collection, rather than by V8's own factor (up to four times on a
// busy heap): with 500 runs waiting for one local-runtime slot the server peaked at 330 MiB, mostly garbage not yet
// collected, and at 255 MiB with this, for no measurable loss of throughput.
v8.setFlagsFromString('--heap-growing-percent=50');

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      log.error(error.message);
      process.exit(2);
    }
    throw error;
  }

  // `npm run backup` and `npm run restore` (backup-cli.ts): a command on the configured database, not a server.
  const [command, ...args] = process.argv.slice(2);
  if (isBackupCommand(command)) process.exit(await runBackupCommand(command, args, config));

  // Signals are handled from the first moment: one may arrive while the server is still starting.
  let starting: Promise<RunningServer | undefined> | undefined;
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info(`${signal} received: shutting down`);
    const server = await starting;
    await server?.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));

  starting = startServer({ config }).catch((error: unknown) => {
    log.error(errorMessage(error));
    process.exit(1);
  });
  await starting;
}

void main();
