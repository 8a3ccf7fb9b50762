import { defineConfig } from '@playwright/test';
import { chromiumLaunchOptions } from '../helpers/browser';

/** Browser tests: Debian's Chromium against the real server, PostgreSQL and the fake model runtime. */
export default defineConfig({
  testDir: '.',
  testMatch: '*.spec.ts',
  globalSetup: './global-setup.ts',
  outputDir: '../../test-results/e2e',
  workers: 1,
  fullyParallel: false,
  timeout: 60_000,
  expect: { timeout: 15_000 },
  reporter: [['list']],
  use: {
    viewport: { width: 1280, height: 800 },
    launchOptions: chromiumLaunchOptions,
    trace: 'retain-on-failure',
  },
});
