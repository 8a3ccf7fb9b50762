import { resolve } from 'node:path';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { alias: { '@contracts': resolve(import.meta.dirname, 'src-server/contracts') } },
  test: {
    include: ['src-server/**/*.test.ts', 'src-main/**/*.test.ts', 'src-renderer/**/*.test.ts', 'test/**/*.test.ts'],
    // `npm test` needs nothing but what `npm install` brings and PostgreSQL: the tests that drive a program of the
    // system (Chromium, Prometheus, curl, git) are `*.system.test.ts`, for `npm run test:system`; the keychain test
    // needs a Secret Service, which `npm run test:keychain` provides.
    exclude: [
      'test/e2e/**',
      'test/reliability/**',
      'test/mcp-tools/**',
      '**/node_modules/**',
      '**/*.keychain.test.ts',
      '**/*.system.test.ts',
    ],
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: more workers only contend for them and for PostgreSQL.
    maxWorkers: 2,
  },
});
