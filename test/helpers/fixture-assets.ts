import fs from 'node:fs/promises';
import os from 'node:os';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { DEFAULT_LAYOUTS } from '../../src-server/assets/asset-compiler';
import type { GraphLayout, Manifest, Phase } from '../../src-server/contracts/assets';
import { DEFAULT_GATE_POLICY, type GatePolicy } from '../../src-server/contracts/gate-policy';
import { NO_TOOLS } from '../../src-server/contracts/tools';

const phase = (id: string, kind: Phase['kind'], extra: Partial<Phase> = {}): Phase => ({
  id,
  name: id[0]!.toUpperCase() + id.slice(1),
  kind,
  description: `The ${id} phase.`,
  expected_output: `${id} notes`,
  classification_options: [],
  required_approval_context: [],
  routes: [],
  ...extra,
});

/** One phase per node of a layout, in its order; `extra` adds fields by node id. */
const phasesOf = (layout: GraphLayout, extra: Record<string, Partial<Phase>> = {}): Phase[] =>
  layout.nodes.map((node) => phase(node.id, node.kind, extra[node.id]));

/** Runs on the compiler's default agent layout: intake, analysis, gate, output (cancelled on rejection). */
export const reviewAgent: Manifest = {
  kind: 'agent',
  name: 'review',
  description: 'Reviews a change and asks before answering.',
  category: 'review',
  graph: DEFAULT_LAYOUTS.agent.name,
  instructions: 'You review software changes.',
  source: 'assets/agents/review.md',
  tools: NO_TOOLS,
  phases: phasesOf(DEFAULT_LAYOUTS.agent, {
    gate: { approval_question: 'Publish this review?', required_approval_context: ['analysis'] },
  }),
};

/**
 * The review agent under another name, with options on its gate (who decides, how many approve, when it expires):
 * for a catalog of its own, `writeFixtureCatalog([gatedAgent(...)])`.
 */
export const gatedAgent = (name: string, gate: Partial<GatePolicy>): Manifest => ({
  ...reviewAgent,
  name,
  source: `assets/agents/${name}.md`,
  tools: NO_TOOLS,
  phases: reviewAgent.phases.map((p) => (p.kind === 'gate' ? { ...p, gate: { ...DEFAULT_GATE_POLICY, ...gate } } : p)),
});

/** Runs on the compiler's default command layout: dispatch, execute, summarize. */
export const summaryCommand: Manifest = {
  kind: 'command',
  name: 'summary',
  description: 'Summarises a repository.',
  category: 'docs',
  graph: DEFAULT_LAYOUTS.command.name,
  instructions: 'You summarise repositories.',
  source: 'assets/commands/summary.md',
  tools: NO_TOOLS,
  phases: phasesOf(DEFAULT_LAYOUTS.command),
};

const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

/**
 * The review agent whose intake acts: the project's tools and the test MCP server (test/fixtures/mcp-test-server.ts)
 * over stdio, as `mock`. Reading asks nobody; `mock.append` (an effect, decided by an owner) and the project's
 * write_file ask; `mock.big` needs two approvers and `mock.mixed` expires after a second; `mock.env` answers, to show
 * what reached the server's environment; `mock.crash` is denied; the rest of the server's tools are named by no policy.
 */
export const toolAgent: Manifest = {
  ...reviewAgent,
  name: 'tool-review',
  source: 'assets/agents/tool-review.md',
  tools: {
    servers: [
      {
        name: 'mock',
        transport: 'stdio',
        command: process.execPath,
        // tsx by its own address: the server starts in the run's project folder, where no node_modules is.
        args: ['--import', TSX_LOADER, path.join(import.meta.dirname, '..', 'fixtures', 'mcp-test-server-process.ts')],
        env: [],
      },
    ],
    policies: [
      { tool: 'mock.echo', policy: 'allow', ask: null },
      { tool: 'mock.env', policy: 'allow', ask: null },
      { tool: 'mock.slow', policy: 'allow', ask: null },
      { tool: 'mock.crash', policy: 'deny', ask: null },
      { tool: 'mock.append', policy: 'ask', ask: { ...DEFAULT_GATE_POLICY, decide_role: 'owner' } },
      { tool: 'mock.big', policy: 'ask', ask: { ...DEFAULT_GATE_POLICY, approvals: 2 } },
      {
        tool: 'mock.mixed',
        policy: 'ask',
        ask: { ...DEFAULT_GATE_POLICY, expiry: { after_s: 1, action: 'reject', target: null } },
      },
    ],
  },
  phases: reviewAgent.phases.map((p) =>
    p.id === 'intake' ? { ...p, tools: { tools: ['project.*', 'mock.*'], max_tool_calls: 6 } } : p,
  ),
};

/**
 * The review agent under the name `ask-review`, whose intake may call the tools of an MCP server over HTTP at `url`
 * as `asker` (test/fixtures/mcp-asking-server.ts, whose tools ask a person mid-call), none of which asks first.
 */
export const askingAgent = (url: string): Manifest => ({
  ...reviewAgent,
  name: 'ask-review',
  source: 'assets/agents/ask-review.md',
  tools: {
    servers: [{ name: 'asker', transport: 'http', url, headers: {} }],
    policies: [{ tool: 'asker.*', policy: 'allow', ask: null }],
  },
  phases: reviewAgent.phases.map((p) =>
    p.id === 'intake' ? { ...p, tools: { tools: ['asker.*'], max_tool_calls: 4 } } : p,
  ),
});

/**
 * A generated/ folder with one agent and one command (and any extra manifests) on the asset compiler's
 * default layouts, independent of the shipped assets.
 */
export async function writeFixtureCatalog(extra: Manifest[] = []): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-generated-'));
  await fs.mkdir(path.join(dir, 'manifests', 'agents'), { recursive: true });
  await fs.mkdir(path.join(dir, 'manifests', 'commands'), { recursive: true });
  await fs.mkdir(path.join(dir, 'graphs'), { recursive: true });
  for (const manifest of [reviewAgent, summaryCommand, ...extra]) {
    await fs.writeFile(
      path.join(dir, 'manifests', `${manifest.kind}s`, `${manifest.name}.json`),
      JSON.stringify(manifest),
    );
  }
  for (const layout of Object.values(DEFAULT_LAYOUTS)) {
    await fs.writeFile(path.join(dir, 'graphs', `${layout.name}.json`), JSON.stringify(layout));
  }
  return dir;
}
