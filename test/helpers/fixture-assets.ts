import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { GraphLayout, Manifest, Phase } from '../../src-server/contracts/assets';

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

export const reviewLayout: GraphLayout = {
  name: 'default-agent',
  entry: 'intake',
  nodes: [
    { id: 'intake', kind: 'llm' },
    { id: 'analysis', kind: 'llm' },
    { id: 'gate', kind: 'gate' },
    { id: 'output', kind: 'llm' },
    { id: 'cancelled', kind: 'terminal' },
  ],
  edges: [
    { from: 'intake', to: 'analysis' },
    { from: 'analysis', to: 'gate' },
    { from: 'gate', to: 'output', condition: 'approved' },
    { from: 'gate', to: 'cancelled', condition: 'rejected' },
  ],
};

export const commandLayout: GraphLayout = {
  name: 'default-command',
  entry: 'dispatch',
  nodes: [
    { id: 'dispatch', kind: 'llm' },
    { id: 'execute', kind: 'llm' },
    { id: 'summarize', kind: 'llm' },
  ],
  edges: [
    { from: 'dispatch', to: 'execute' },
    { from: 'execute', to: 'summarize' },
  ],
};

export const reviewAgent: Manifest = {
  kind: 'agent',
  name: 'review',
  description: 'Reviews a change and asks before answering.',
  category: 'review',
  graph: 'default-agent',
  instructions: 'You review software changes.',
  source: 'assets/agents/review.md',
  phases: [
    phase('intake', 'llm'),
    phase('analysis', 'llm'),
    phase('gate', 'gate', { approval_question: 'Publish this review?', required_approval_context: ['analysis'] }),
    phase('output', 'llm'),
    phase('cancelled', 'terminal'),
  ],
};

export const summaryCommand: Manifest = {
  kind: 'command',
  name: 'summary',
  description: 'Summarises a repository.',
  category: 'docs',
  graph: 'default-command',
  instructions: 'You summarise repositories.',
  source: 'assets/commands/summary.md',
  phases: [phase('dispatch', 'llm'), phase('execute', 'llm'), phase('summarize', 'llm')],
};

/** A generated/ folder with one agent and one command (and any extra manifests), independent of the shipped assets. */
export async function writeFixtureCatalog(extra: Manifest[] = []): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'svc-generated-'));
  await fs.mkdir(path.join(dir, 'manifests', 'agents'), { recursive: true });
  await fs.mkdir(path.join(dir, 'manifests', 'commands'), { recursive: true });
  await fs.mkdir(path.join(dir, 'graphs'), { recursive: true });
  await fs.writeFile(path.join(dir, 'manifests', 'agents', 'review.json'), JSON.stringify(reviewAgent));
  await fs.writeFile(path.join(dir, 'manifests', 'commands', 'summary.json'), JSON.stringify(summaryCommand));
  for (const manifest of extra) {
    await fs.writeFile(path.join(dir, 'manifests', `${manifest.kind}s`, `${manifest.name}.json`), JSON.stringify(manifest));
  }
  await fs.writeFile(path.join(dir, 'graphs', 'default-agent.json'), JSON.stringify(reviewLayout));
  await fs.writeFile(path.join(dir, 'graphs', 'default-command.json'), JSON.stringify(commandLayout));
  return dir;
}
