import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { getLogger, registerSecret } from '../log';

const log = getLogger('svc.secrets');

/** The file a key generated on first use is kept in, inside DATA_DIR (mode 0600). */
export const KEY_FILE = 'secrets.key';
const VERSION = 'v1';

export class SecretKeyError extends Error {
  override name = 'SecretKeyError';
}

/** A 32-byte key as SECRETS_KEY gives it: base64 (44 characters) or hex (64). */
export function parseKey(text: string, variable: string): Buffer {
  const value = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(value) ? Buffer.from(value, 'hex') : Buffer.from(value, 'base64');
  if (key.length !== 32) {
    throw new SecretKeyError(
      `${variable} must be 32 bytes, base64 or hex (for example the output of \`openssl rand -base64 32\`)`,
    );
  }
  return key;
}

/** A key's id: enough of its hash to tell keys apart in a sealed value, nothing to learn the key from. */
const keyIdOf = (key: Buffer) => createHash('sha256').update('svc-secret-key').update(key).digest('hex').slice(0, 12);

/**
 * The secrets the service keeps for its users (Slack's tokens and signing secrets): sealed with AES-256-GCM under a key
 * of their own, which is never in the database and never derived from SESSION_SECRET. A sealed value names its key, so
 * that after a rotation the previous key still opens what it sealed until it is sealed again
 * (docs/configuration.md#secrets-the-service-keeps).
 */
export class SecretBox {
  private readonly keys: Map<string, Buffer>;
  readonly currentKeyId: string;

  constructor(
    current: Buffer,
    previous: Buffer[] = [],
    /** Where the key came from, for the error of a value it cannot open. */
    private readonly source = 'SECRETS_KEY',
  ) {
    this.currentKeyId = keyIdOf(current);
    this.keys = new Map([[this.currentKeyId, current], ...previous.map((k) => [keyIdOf(k), k] as const)]);
  }

  seal(plain: string): string {
    registerSecret(plain);
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(this.currentKeyId)!, iv);
    const sealed = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    const parts = [iv, cipher.getAuthTag(), sealed].map((b) => b.toString('base64url'));
    return [VERSION, this.currentKeyId, ...parts].join('.');
  }

  open(sealed: string): string {
    const [version, keyId, iv, tag, data] = sealed.split('.');
    if (version !== VERSION || !keyId || !iv || !tag || data === undefined) {
      throw new SecretKeyError('a kept secret is not in a form this version reads');
    }
    const key = this.keys.get(keyId);
    if (!key) {
      throw new SecretKeyError(
        `a kept secret was sealed with key ${keyId}, which this process does not have (it has ${this.currentKeyId} from ` +
          `${this.source}): give every process the same SECRETS_KEY, or set the key before as SECRETS_KEY_PREVIOUS`,
      );
    }
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    let plain: string;
    try {
      plain = Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      throw new SecretKeyError(`a kept secret sealed with key ${keyId} does not open: it was changed`);
    }
    // Whatever prints it by mistake from now on prints *** instead.
    registerSecret(plain);
    return plain;
  }

  /** Whether the value was sealed with an older key (and should be sealed again with the current one). */
  isStale(sealed: string): boolean {
    return sealed.split('.')[1] !== this.currentKeyId;
  }
}

/**
 * The secret box of this process: SECRETS_KEY (and SECRETS_KEY_PREVIOUS during a rotation), or else a key generated on
 * first use and kept in DATA_DIR/secrets.key, readable by the service's user alone. Processes of one cluster need the
 * same SECRETS_KEY: each would otherwise make a key of its own.
 */
export async function openSecretBox(config: {
  SECRETS_KEY?: string;
  SECRETS_KEY_PREVIOUS?: string;
  DATA_DIR: string;
}): Promise<SecretBox> {
  const previous = config.SECRETS_KEY_PREVIOUS ? [parseKey(config.SECRETS_KEY_PREVIOUS, 'SECRETS_KEY_PREVIOUS')] : [];
  if (config.SECRETS_KEY) return new SecretBox(parseKey(config.SECRETS_KEY, 'SECRETS_KEY'), previous);
  const file = path.join(config.DATA_DIR, KEY_FILE);
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    await fs.mkdir(config.DATA_DIR, { recursive: true });
    // `wx`: two processes starting at once on one folder keep the first key, and the second reads it.
    await fs
      .writeFile(file, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' })
      .then(() => log.info(`generated the key of kept secrets in ${file}: back it up with the database`))
      .catch((failure: NodeJS.ErrnoException) => {
        if (failure.code !== 'EEXIST') throw failure;
      });
    text = await fs.readFile(file, 'utf8');
  }
  registerSecret(text.trim());
  return new SecretBox(parseKey(text, file), previous, file);
}
