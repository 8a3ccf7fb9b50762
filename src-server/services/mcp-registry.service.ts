import { checkedBody } from '../assets/asset-error';
import { serverOf, type ServerFrontmatter } from '../assets/tool-declarations';
import type { Principal } from '../auth/principal';
import { forbidden, notFound } from '../contracts/errors';
import type { RegisteredMcpServer } from '../contracts/tools';
import type { McpServerEntry, McpServersRepository } from '../db/mcp-servers.repository';
import { getLogger } from '../log';

const log = getLogger('svc.api');

function requireInstanceAdmin(principal: Principal): void {
  if (!principal.instanceAdmin) throw forbidden('registering MCP servers needs the instance administrator');
}

/**
 * The instance's registry of MCP servers (docs/tools.md#the-instances-mcp-servers): stored agents declare no program
 * and no variable; they name a server an instance administrator registered here. Everyone signed in sees which
 * servers there are; only instance administrators see what each runs or reaches, and with which variables.
 */
export function mcpRegistryService(deps: { servers: McpServersRepository }) {
  const { servers } = deps;
  const shown = (entry: McpServerEntry, principal: Principal): RegisteredMcpServer => ({
    name: entry.server.name,
    transport: entry.server.transport,
    server: principal.instanceAdmin ? entry.server : null,
    registered_by: entry.registeredBy,
    registered_at: entry.registeredAt,
  });

  return {
    async list(principal: Principal): Promise<RegisteredMcpServer[]> {
      return (await servers.list()).map((entry) => shown(entry, principal));
    },

    /** Registers a server, or replaces the one of that name, checked as a shipped asset's server is (400). */
    async register(
      principal: Principal,
      name: string,
      given: Omit<ServerFrontmatter, 'registry'>,
    ): Promise<RegisteredMcpServer> {
      requireInstanceAdmin(principal);
      // A registered server is a program or an address itself: it names no other.
      const server = checkedBody((source) => serverOf(source, [], name, given, { registry: new Map(), stored: false }));
      const entry = await servers.put(server, principal.id);
      log.info(`MCP server ${name} (${server.transport}) registered by ${principal.name}`);
      return shown(entry, principal);
    },

    async remove(principal: Principal, name: string): Promise<void> {
      requireInstanceAdmin(principal);
      if (!(await servers.remove(name))) throw notFound(`MCP server ${name} not found`);
      log.info(`MCP server ${name} removed from the registry by ${principal.name}`);
    },
  };
}

export type McpRegistryService = ReturnType<typeof mcpRegistryService>;
