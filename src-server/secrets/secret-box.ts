import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import fsSync from 'node:fs';
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
  private readonly keys = new Map<string, Buffer>();
  private current: string | undefined;

  constructor(
    /**
     * The key new values are sealed with; or how to make it when the first one is (a key file written then), and how to
     * find one another process has made since.
     */
    current: Buffer | { make: () => Buffer; find: () => Buffer | undefined },
    previous: Buffer[] = [],
    /** Where the key came from, for the error of a value it cannot open. */
    private readonly source = 'SECRETS_KEY',
  ) {
    for (const key of previous) this.keys.set(keyIdOf(key), key);
    if (Buffer.isBuffer(current)) this.use(current);
    else this.later = current;
  }

  private later: { make: () => Buffer; find: () => Buffer | undefined } | undefined;

  private use(key: Buffer): string {
    this.current = keyIdOf(key);
    this.keys.set(this.current, key);
    return this.current;
  }

  /** The id of the key new values are sealed with (made now, when there was none yet). */
  get currentKeyId(): string {
    return this.current ?? this.use(this.later!.make());
  }

  seal(plain: string): string {
    registerSecret(plain);
    const keyId = this.currentKeyId;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(keyId)!, iv);
    const sealed = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    const parts = [iv, cipher.getAuthTag(), sealed].map((b) => b.toString('base64url'));
    return [VERSION, keyId, ...parts].join('.');
  }

  open(sealed: string): string {
    const [version, keyId, iv, tag, data] = sealed.split('.');
    if (version !== VERSION || !keyId || !iv || !tag || data === undefined) {
      throw new SecretKeyError('a kept secret is not in a form this version reads');
    }
    // Sealed by another process on this data folder since this one started: its key is in the file now.
    if (!this.keys.has(keyId) && this.current === undefined) {
      const found = this.later?.find();
      if (found) this.use(found);
    }
    const key = this.keys.get(keyId);
    if (!key) {
      throw new SecretKeyError(
        `a kept secret was sealed with key ${keyId}, which this process does not have (it has ` +
          `${this.current ?? 'none yet'} from ${this.source}): give every process the same SECRETS_KEY, or set the ` +
          'key before as SECRETS_KEY_PREVIOUS',
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
    if (this.current === undefined) {
      // No key yet: nothing here sealed it, and nothing can be sealed again without making one.
      const found = this.later?.find();
      if (!found) return false;
      this.use(found);
    }
    return sealed.split('.')[1] !== this.current;
  }
}

/**
 * The secret box of this process: SECRETS_KEY (and SECRETS_KEY_PREVIOUS during a rotation), or else a key kept in
 * DATA_DIR/secrets.key, readable by the service's user alone, and made when the first secret is sealed (a server that
 * keeps none writes no file). Processes of one cluster need the same SECRETS_KEY: each would otherwise make its own.
 */
export async function openSecretBox(config: {
  SECRETS_KEY?: string;
  SECRETS_KEY_PREVIOUS?: string;
  DATA_DIR: string;
}): Promise<SecretBox> {
  const previous = config.SECRETS_KEY_PREVIOUS ? [parseKey(config.SECRETS_KEY_PREVIOUS, 'SECRETS_KEY_PREVIOUS')] : [];
  if (config.SECRETS_KEY) return new SecretBox(parseKey(config.SECRETS_KEY, 'SECRETS_KEY'), previous);
  const file = path.join(config.DATA_DIR, KEY_FILE);
  const read = (text: string) => {
    registerSecret(text.trim());
    return parseKey(text, file);
  };
  try {
    return new SecretBox(read(await fs.readFile(file, 'utf8')), previous, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const find = () => {
    try {
      return read(fsSync.readFileSync(file, 'utf8'));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  };
  // Made at the first seal, once: `wx` keeps the first key when two processes on one folder make one at once.
  const make = () => {
    fsSync.mkdirSync(config.DATA_DIR, { recursive: true });
    try {
      fsSync.writeFileSync(file, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
      log.info(`made the key of kept secrets in ${file}: back it up with the database`);
    } catch (failure) {
      if ((failure as NodeJS.ErrnoException).code !== 'EEXIST') throw failure;
    }
    return read(fsSync.readFileSync(file, 'utf8'));
  };
  return new SecretBox({ make, find }, previous, file);
}
