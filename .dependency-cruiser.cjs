/**
 * The layers of the code, checked by `npm run lint:layers` (dependency-cruiser). Imports point down:
 *
 *   contracts → config, log → db → assets, models, context, auth, net, webhooks → runtime → http → main.ts, cli.ts
 *
 * and the entry points (src-main, build scripts, the studio) reach the server only where named below.
 * docs/architecture.md draws the same picture.
 */
const layer = (name) => `^src-server/${name}`;
const LOWER_SERVICES = '(assets|models|context|auth|net|webhooks)/';

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A cycle makes two modules one.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'contracts-are-the-bottom',
      severity: 'error',
      comment: 'contracts/ is shared with the studio: it imports nothing else of the server.',
      from: { path: layer('contracts/') },
      to: { path: '^src-server/', pathNot: layer('contracts/') },
    },
    {
      name: 'config-and-log-sit-on-contracts',
      severity: 'error',
      from: { path: '^src-server/(config|log)\\.ts$' },
      to: { path: '^src-server/', pathNot: ['^src-server/contracts/', '^src-server/(config|log)\\.ts$'] },
    },
    {
      name: 'db-below-services',
      severity: 'error',
      comment: 'Repositories hold SQL only; rules live in the services above them.',
      from: { path: layer('db/') },
      to: { path: '^src-server/', pathNot: ['^src-server/(contracts|db)/', '^src-server/(config|log)\\.ts$'] },
    },
    {
      name: 'lower-services-below-runtime',
      severity: 'error',
      comment:
        'assets, models, context, auth, net and webhooks serve the run engine and http; they never reach up into either.',
      from: { path: layer(LOWER_SERVICES) },
      to: { path: '^src-server/(runtime|http)/|^src-server/(main|cli)\\.ts$' },
    },
    {
      name: 'net-stands-alone',
      severity: 'error',
      comment: "net/ says which addresses are the server's own network, for any service: it imports only Node.",
      from: { path: layer('net/') },
      to: { path: '^src-server/', pathNot: layer('net/') },
    },
    {
      name: 'runtime-below-http',
      severity: 'error',
      from: { path: layer('runtime/') },
      to: { path: '^src-server/http/|^src-server/(main|cli)\\.ts$' },
    },
    {
      name: 'http-below-entry-points',
      severity: 'error',
      from: { path: layer('http/') },
      to: { path: '^src-server/(main|cli)\\.ts$' },
    },
    {
      name: 'routers-do-not-import-the-app',
      severity: 'error',
      comment: 'Routers receive their dependencies (http/deps.ts); only main.ts composes the app.',
      from: { path: '^src-server/http/.+\\.router\\.ts$' },
      to: { path: '^src-server/http/app\\.ts$' },
    },
    {
      name: 'studio-sees-contracts-only',
      severity: 'error',
      comment:
        'The studio runs in a browser: it shares contracts/ with the server and, with the desktop app, the preload API types.',
      from: { path: '^src-renderer/' },
      to: { path: '^src-(server|main)/', pathNot: [layer('contracts/'), '^src-main/desktop-api\\.ts$'] },
    },
    {
      name: 'desktop-starts-the-server',
      severity: 'error',
      comment: 'src-main stays thin: it starts the server and reads its settings, nothing deeper.',
      from: { path: '^src-main/' },
      to: { path: '^src-server/', pathNot: ['^src-server/(main|config)\\.ts$', layer('contracts/')] },
    },
    {
      name: 'product-code-does-not-import-tests',
      severity: 'error',
      from: { path: '^src-' },
      to: { path: '^test/' },
    },
    {
      name: 'keytar-only-in-the-keychain-module',
      severity: 'error',
      comment: 'keytar is optional: only src-main/keychain.ts may load it, at run time.',
      from: { pathNot: '^src-main/keychain\\.ts$' },
      to: { path: 'node_modules/keytar' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|out|generated|test-results)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
