import { defineConfig } from 'vitest/config';
import unit from './vitest.config';

/**
 * The tests that drive programs of the system, which `.ci/run` installs from Debian's packages (chromium,
 * prometheus, curl, git): `npm run test:system`. The rest of `npm test`'s configuration holds for them.
 */
export default defineConfig({
  ...unit,
  test: {
    ...unit.test,
    include: ['{src-server,src-main,src-renderer,test}/**/*.system.test.ts'],
    exclude: unit.test?.exclude?.filter((pattern) => pattern !== '**/*.system.test.ts'),
  },
});
