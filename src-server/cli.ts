import { ConfigError, loadConfig } from './config';
import { getLogger } from './log';
import { startServer } from './main';

/** Headless entry point: `npm start` and `npm run serve`. */
const log = getLogger('svc.api');

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

  let server;
  try {
    server = await startServer({ config });
  } catch (error) {
    log.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  }

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info(`${signal} received: shutting down`);
    await server.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

void main();
