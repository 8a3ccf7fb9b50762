/**
 * The layers of the code, checked by `npm run lint:layers` (dependency-cruiser). Imports point down:
 *
 *   contracts → config, log → storage → db → assets, models, context, auth, net, webhooks, tools, tracing → engine →
 *     services, metrics → http → main.ts, cli.ts
 *
 * and the entry points (src-main, build scripts, the studio) reach the server only where named below. Outside
 * engine/, only its index is imported. docs/architecture.md draws the same picture, and test/server/layer-rules.test.ts
 * checks that every rule matches modules (a rule that matches nothing passes for nothing).
 */
const layer = (name) => `^src-server/${name}`;
const LOWER_SERVICES = '(assets|models|context|auth|net|webhooks|tools|tracing|secrets|slack|mail)/';

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
      name: 'storage-is-interfaces-and-twins',
      severity: 'error',
      comment:
        'storage/ says what is stored, without a database: what the run engine stores (interfaces, kept in memory for ' +
        'unit tests), the rows the services hand http/, and which errors mean the database is away.',
      from: { path: layer('storage/') },
      to: { path: '^src-server/', pathNot: ['^src-server/(contracts|storage)/', '^src-server/(config|log)\\.ts$'] },
    },
    {
      name: 'db-below-services',
      severity: 'error',
      comment: 'Repositories hold SQL only; rules live in the engine and the services above them.',
      from: { path: layer('db/') },
      to: {
        path: '^src-server/',
        pathNot: ['^src-server/(contracts|storage|db)/', '^src-server/(config|log)\\.ts$'],
      },
    },
    {
      name: 'lower-services-below-the-engine',
      severity: 'error',
      comment:
        'assets, models, context, auth, net, webhooks, tools and tracing serve the run engine, the services and http; ' +
        'they never reach up.',
      from: { path: layer(LOWER_SERVICES) },
      to: { path: '^src-server/(engine|services|http)/|^src-server/(main|cli)\\.ts$' },
    },
    {
      name: 'net-stands-alone',
      severity: 'error',
      comment: "net/ says which addresses are the server's own network, for any service: it imports only Node.",
      from: { path: layer('net/') },
      to: { path: '^src-server/', pathNot: layer('net/') },
    },
    {
      name: 'engine-on-interfaces',
      severity: 'error',
      comment:
        'The run engine stores through the interfaces of storage/ (PostgreSQL or the in-memory twins), never db/, and ' +
        'is reached from above only.',
      from: { path: layer('engine/') },
      to: { path: '^src-server/(db|services|http)/|^src-server/(main|cli)\\.ts$' },
    },
    {
      name: 'only-the-engine-index',
      severity: 'error',
      comment:
        'Outside engine/, only its index is imported: leases, event ids, the graph and the event log stay inside.',
      from: { pathNot: layer('engine/') },
      to: { path: layer('engine/'), pathNot: layer('engine/index\\.ts$') },
    },
    {
      name: 'services-below-http',
      severity: 'error',
      comment: 'Request services hold the rules; the routers above them hold the HTTP.',
      from: { path: layer('services/') },
      to: { path: '^src-server/http/|^src-server/(main|cli)\\.ts$' },
    },
    {
      name: 'metrics-below-http',
      severity: 'error',
      comment:
        'metrics/ counts what the engine, the models and the streams tell it through their interfaces, and reads the ' +
        'cluster through db/; the route that serves it is in http/.',
      from: { path: layer('metrics/') },
      to: { path: '^src-server/(services|http)/|^src-server/(main|cli)\\.ts$' },
    },
    {
      name: 'metrics-are-told-not-reached',
      severity: 'error',
      comment:
        'The engine, the models and the rest below http/ tell an observer main.ts hands them; they never import ' +
        'metrics/ (nor prom-client: eslint.config.js keeps it in metrics/).',
      from: {
        path: [
          '^src-server/(contracts|storage|db|engine|services)/',
          layer(LOWER_SERVICES),
          '^src-server/(config|log)\\.ts$',
        ],
      },
      to: { path: layer('metrics/') },
    },
    {
      name: 'doors-decide-through-the-approvals-service',
      severity: 'error',
      comment:
        'The doors (routes, the LangGraph and MCP doors) reach runs through the services: a stop is decided by ' +
        "the approvals service's one decide(), never by the engine from a door (test/server/one-decision.test.ts).",
      from: { path: layer('http/') },
      to: { path: layer('engine/') },
    },
    {
      name: 'http-below-entry-points',
      severity: 'error',
      from: { path: layer('http/') },
      to: { path: '^src-server/(main|cli)\\.ts$' },
    },
    {
      name: 'http-reads-through-services',
      severity: 'error',
      comment:
        'The doors (the routers, /mcp, the LangGraph API) read and write through the services, so that each door does ' +
        'not grow a read model of its own: http/ imports nothing of db/. The rows a service hands them are declared ' +
        'in storage/, and main.ts builds the services on the repositories.',
      from: { path: layer('http/') },
      to: { path: layer('db/') },
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
