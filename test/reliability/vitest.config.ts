import { defineConfig } from 'vitest/config';

/** Slow suites that kill processes, restart PostgreSQL and hold load: `npm run test:reliability`. */
export default defineConfig({
  test: {
    root: new URL('../..', import.meta.url).pathname,
    include: ['test/reliability/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 180_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});
