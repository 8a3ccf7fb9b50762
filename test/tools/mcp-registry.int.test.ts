import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_TOKEN_ADMIN } from '../../src-server/auth/principal';
import { DEFAULT_ORG_ID } from '../../src-server/contracts/tenancy';
import type { RegisteredMcpServer } from '../../src-server/contracts/tools';
import { mcpServersRepository } from '../../src-server/db/mcp-servers.repository';
import { useIntegrationServer } from '../helpers/integration';
import type { TestServer } from '../helpers/server';
import { addUser, signSession } from '../helpers/sessions';

/**
 * The instance's registry of MCP servers (docs/tools.md#the-instances-mcp-servers): the instance administrator
 * registers servers, checked as a shipped asset's are; everyone signed in sees their names, nobody else what they run.
 */
const SECRET = 'a-session-secret-for-the-registry-tests-0123456789';
const API_TOKEN = 'mcp-registry-test-admin-token-0123456789';

const ctx = useIntegrationServer({ server: false, model: false });
let server: TestServer;
let orgAdmin: string;

beforeAll(async () => {
  server = await ctx.start({ AUTH_ENABLED: 'true', SESSION_SECRET: SECRET, SVC_API_TOKEN: API_TOKEN });
  // An organisation's admin is no instance administrator.
  const id = await addUser(server.pool, 'Ada Admin', [['org', DEFAULT_ORG_ID, 'admin']]);
  orgAdmin = await signSession(id, SECRET, '1h', 'Ada Admin');
});
afterAll(() => server?.close());

const as = (token: string) => ({ authorization: `Bearer ${token}` });
const register = (name: string, declaration: Record<string, unknown>, token = API_TOKEN) =>
  server.request(`/mcp-servers/${name}`, { method: 'PUT', json: declaration, headers: as(token) });
const list = async (token: string) =>
  (await (await server.request('/mcp-servers', { headers: as(token) })).json()) as RegisteredMcpServer[];
const errorOf = async (res: Response) => ((await res.json()) as { error: { message: string } }).error.message;

const wiki = { url: 'https://wiki.example.com/mcp', headers: { Authorization: 'WIKI_AUTHORIZATION' } };
const files = { command: 'mcp-server-filesystem', args: ['{project_path}'] };

describe("the instance's MCP servers", () => {
  it('are registered by the instance administrator, and named to everyone else without what they run', async () => {
    const registered = await register('wiki', wiki);
    expect(registered.status).toBe(200);
    expect(await registered.json()).toMatchObject({
      name: 'wiki',
      transport: 'http',
      server: { name: 'wiki', transport: 'http', ...wiki },
      registered_by: { id: API_TOKEN_ADMIN.id, name: 'api-token' },
    });
    expect((await register('files', files)).status).toBe(200);

    expect(await list(API_TOKEN)).toEqual([
      expect.objectContaining({
        name: 'files',
        server: {
          name: 'files',
          transport: 'stdio',
          command: 'mcp-server-filesystem',
          args: ['{project_path}'],
          env: [],
        },
      }),
      expect.objectContaining({ name: 'wiki', server: { name: 'wiki', transport: 'http', ...wiki } }),
    ]);
    expect(await list(orgAdmin)).toEqual([
      expect.objectContaining({ name: 'files', transport: 'stdio', server: null }),
      expect.objectContaining({ name: 'wiki', transport: 'http', server: null }),
    ]);
    // What a stored agent's `registry: <name>` is compiled against.
    expect(await mcpServersRepository(server.pool).all()).toEqual(
      new Map([
        [
          'files',
          { name: 'files', transport: 'stdio', command: 'mcp-server-filesystem', args: ['{project_path}'], env: [] },
        ],
        ['wiki', { name: 'wiki', transport: 'http', ...wiki }],
      ]),
    );
  });

  it('are replaced and removed by the instance administrator only', async () => {
    expect((await register('wiki', { url: 'https://wiki.example.com/v2/mcp' })).status).toBe(200);
    expect((await list(API_TOKEN)).find((s) => s.name === 'wiki')!.server).toEqual({
      name: 'wiki',
      transport: 'http',
      url: 'https://wiki.example.com/v2/mcp',
      headers: {},
    });

    const refused = await register('tracker', { url: 'https://tracker.example.com/mcp' }, orgAdmin);
    expect(refused.status).toBe(403);
    expect(await errorOf(refused)).toBe('registering MCP servers needs the instance administrator');
    const remove = (name: string, token = API_TOKEN) =>
      server.request(`/mcp-servers/${name}`, { method: 'DELETE', headers: as(token) });
    expect((await remove('wiki', orgAdmin)).status).toBe(403);
    expect((await remove('wiki')).status).toBe(204);
    expect((await remove('wiki')).status).toBe(404);
    expect((await list(orgAdmin)).map((s) => s.name)).toEqual(['files']);
  });

  it('are checked as the servers of a shipped asset are, each problem at its field', async () => {
    const cases: [name: string, declaration: Record<string, unknown>, message: string][] = [
      [
        'both',
        { command: 'x', url: 'https://x.example.com/mcp' },
        'invalid request body: has both command and url: a server is a program over stdio (command) or an HTTP endpoint (url)',
      ],
      [
        'neither',
        { args: ['x'] },
        'invalid request body: needs command (a program over stdio) or url (a streamable HTTP endpoint)',
      ],
      [
        'secret',
        { command: 'x', env: ['SESSION_SECRET'] },
        `invalid request body: env[0]: "SESSION_SECRET" is a variable the service reads itself (its settings, its secrets among them): a tool's server never gets it`,
      ],
      [
        'credentials',
        { url: 'https://user:password@x.example.com/mcp' },
        'invalid request body: url: carries credentials: give them in headers (a header → the variable holding its value)',
      ],
      [
        'project',
        { command: 'x' },
        'invalid request body: "project" is the name of the built-in project tools: give the server another',
      ],
    ];
    for (const [name, declaration, message] of cases) {
      const res = await register(name, declaration);
      expect(res.status, name).toBe(400);
      expect(await errorOf(res), name).toBe(message);
    }
    const unknownField = await register('extra', { command: 'x', cwd: '/' });
    expect(unknownField.status).toBe(400);
    expect((await register('no.dots', files)).status).toBe(400);
    expect((await list(API_TOKEN)).map((s) => s.name)).toEqual(['files']);
  });
});
