import path from 'node:path';
import type { Config } from './config';
import { errorMessage } from './contracts/errors';
import { backup, restore, type BackupManifest } from './db/backup';
import { getLogger } from './log';

/**
 * `npm run backup -- <target>` and `npm run restore -- <backup> [--force]`: the `backup` and `restore` commands of
 * cli.ts, on the database the server's configuration names (DATA_DIR's embedded one, or DATABASE_URL's). See
 * docs/backups.md. Answers the exit code: 0 done, 1 refused or failed (one line saying why), 2 a wrong command line.
 */
const log = getLogger('svc.backup');

export type BackupCommand = 'backup' | 'restore';

export const isBackupCommand = (word: string | undefined): word is BackupCommand =>
  word === 'backup' || word === 'restore';

const USAGE: Record<BackupCommand, string> = {
  backup:
    'usage: npm run backup -- <target>: a new name ending in .tar.gz (an archive), an existing folder (an archive ' +
    'named after the time in it), or a new folder name (the backup as a folder)',
  restore: 'usage: npm run restore -- <backup> [--force]: a .tar.gz or a folder that npm run backup wrote',
};

export async function runBackupCommand(
  command: BackupCommand,
  args: string[],
  config: Config,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    log.info(USAGE[command]);
    return 0;
  }
  const options = args.filter((arg) => arg.startsWith('-'));
  const names = args.filter((arg) => !arg.startsWith('-'));
  const allowed = command === 'restore' ? ['--force'] : [];
  const wrong = options.filter((option) => !allowed.includes(option));
  if (names.length !== 1 || wrong.length > 0) {
    log.error(wrong.length ? `unknown option ${wrong.join(', ')}; ${USAGE[command]}` : USAGE[command]);
    return 2;
  }
  // npm runs a script in the package's folder: a relative name means the folder npm was started in.
  const base = env.npm_lifecycle_event === command && env.INIT_CWD ? env.INIT_CWD : process.cwd();
  const where = path.resolve(base, names[0]!);
  const common = { dataDir: config.DATA_DIR, databaseUrl: config.DATABASE_URL, pgBinDir: env.PG_BIN_DIR || undefined };
  try {
    if (command === 'backup') {
      const done = await backup({ ...common, target: where });
      log.info(`backup written to ${done.path}: ${describe(done.manifest)}`);
    } else {
      const done = await restore({
        ...common,
        source: where,
        force: options.includes('--force'),
        secretsKeySet: Boolean(config.SECRETS_KEY),
      });
      if (done.setAside)
        log.info(`what the restore replaced is kept in ${done.setAside}: remove it when you no longer need it`);
      const into = config.DATABASE_URL ? 'the database of DATABASE_URL' : `DATA_DIR ${config.DATA_DIR}`;
      log.info(`restored ${where} into ${into} (${describe(done.manifest)}): start the server to use it`);
    }
    return 0;
  } catch (error) {
    log.error(`${command} ${command === 'backup' ? 'not written' : 'not done'}: ${errorMessage(error)}`);
    return 1;
  }
}

function describe(manifest: BackupManifest): string {
  const what = manifest.database === 'embedded' ? `the embedded database, ${manifest.method}` : 'pg_dump';
  const migration =
    manifest.schema_migration ?? (manifest.method === 'stopped' ? 'not read from a stopped folder' : 'none');
  return (
    `${what}, PostgreSQL ${manifest.postgres_major}, schema migration ${migration}, ` +
    `${manifest.secrets_key ? 'with' : 'without'} secrets.key, service ${manifest.service_version}, ` +
    `taken ${manifest.created_at}`
  );
}
