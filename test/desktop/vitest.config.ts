import { defineConfig } from 'vitest/config';

/** Only the keychain test; run inside the D-Bus session that run-keychain-test.sh starts. */
export default defineConfig({
  test: { root: new URL('../..', import.meta.url).pathname, include: ['src-main/**/*.keychain.test.ts'] },
});
