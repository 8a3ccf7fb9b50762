import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
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
