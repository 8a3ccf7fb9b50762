import { defineConfig } from 'vitest/config';

/**
 * The MCP project's own tools against /mcp and the service's MCP client: `npm run test:mcp-tools` (it installs them in
 * test/mcp-tools first, apart from the main install, with the Node 22 they run on).
 */
export default defineConfig({
  test: {
    root: new URL('../..', import.meta.url).pathname,
    include: ['test/mcp-tools/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 180_000,
    hookTimeout: 60_000,
  },
});
