import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src-server/**/*.test.ts', 'src-main/**/*.test.ts', 'build/**/*.test.ts', 'test/**/*.test.ts'],
    exclude: ['test/e2e/**', 'test/reliability/**', 'node_modules/**'],
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: more workers only contend for them and for PostgreSQL.
    maxWorkers: 2,
  },
});
