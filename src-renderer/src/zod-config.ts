import { config } from 'zod';

/**
 * The studio's content policy allows no eval. zod would try `new Function` once, when its first object schema is
 * built, to compile its parsers (a violation the browser reports), and then interpret them anyway: it is told so
 * up front instead. main.ts imports this module first, before any schema exists.
 */
config({ jitless: true });
