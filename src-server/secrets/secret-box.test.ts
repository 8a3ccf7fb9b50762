import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { KEY_FILE, openSecretBox, SecretBox } from './secret-box';

const key = () => randomBytes(32);

describe('the secret box', () => {
  it('seals a secret so that only its key opens it, and a sealed value changed by one character opens to nothing', () => {
    const box = new SecretBox(key());
    const sealed = box.seal('xoxb-the-bot-token');
    expect(sealed).not.toContain('xoxb');
    expect(box.open(sealed)).toBe('xoxb-the-bot-token');
    // Sealed twice, two different values (a new nonce each time).
    expect(box.seal('xoxb-the-bot-token')).not.toBe(sealed);
    const last = sealed.at(-2) === 'A' ? 'B' : 'A';
    expect(() => box.open(`${sealed.slice(0, -2)}${last}${sealed.at(-1)}`)).toThrow(/does not open: it was changed/);
    expect(() => new SecretBox(key()).open(sealed)).toThrow(
      /sealed with key [0-9a-f]{12}, which this process does not have .*SECRETS_KEY_PREVIOUS/,
    );
  });

  it('opens what the previous key sealed during a rotation, and says it is to be sealed again', () => {
    const before = key();
    const old = new SecretBox(before).seal('signing-secret');
    const rotated = new SecretBox(key(), [before]);
    expect(rotated.open(old)).toBe('signing-secret');
    expect(rotated.isStale(old)).toBe(true);
    expect(rotated.isStale(rotated.seal('signing-secret'))).toBe(false);
  });

  it('takes SECRETS_KEY as base64 or hex, refuses a key of another size, and never uses SESSION_SECRET', async () => {
    const raw = key();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'secret-box-'));
    const base64 = await openSecretBox({ SECRETS_KEY: raw.toString('base64'), DATA_DIR: dir });
    const hex = await openSecretBox({ SECRETS_KEY: raw.toString('hex'), DATA_DIR: dir });
    expect(hex.open(base64.seal('same key'))).toBe('same key');
    await expect(openSecretBox({ SECRETS_KEY: 'too-short', DATA_DIR: dir })).rejects.toThrow(
      /SECRETS_KEY must be 32 bytes/,
    );
    // Given a key, no key file is made.
    expect(fs.existsSync(path.join(dir, KEY_FILE))).toBe(false);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('without SECRETS_KEY makes a key in the data folder at the first seal, readable by its owner alone, and keeps it', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'secret-box-'));
    const [first, second] = await Promise.all([openSecretBox({ DATA_DIR: dir }), openSecretBox({ DATA_DIR: dir })]);
    const file = path.join(dir, KEY_FILE);
    // A server that keeps no secret writes no key.
    expect(fs.existsSync(file)).toBe(false);
    const sealed = first.seal('first');
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(second.open(sealed)).toBe('first');
    expect(second.open(first.seal('kept'))).toBe('kept');
    const later = await openSecretBox({ DATA_DIR: dir });
    expect(later.open(first.seal('kept'))).toBe('kept');
    expect(later.currentKeyId).toBe(first.currentKeyId);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
