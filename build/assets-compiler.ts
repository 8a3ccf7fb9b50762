import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { z } from 'zod';
import {
  GraphLayoutSchema,
  ManifestSchema,
  RouteConditionSchema,
  type AssetKind,
  type GraphLayout,
  type Manifest,
  type Phase,
} from '../src-server/contracts/assets';

/**
 * Turns asset files into what the server loads:
 *   assets/agents/*.md, assets/commands/*.md  (YAML frontmatter + markdown instructions)
 *   assets/graphs/<name>.json                 (custom layouts, chosen by an agent's `category`)
 * into generated/manifests/{agents,commands}/<name>.json, generated/graphs/<layout>.json and
 * generated/runtime-contract.json. A graph ends at a node without outgoing edges.
 */

export class AssetError extends Error {
  override name = 'AssetError';
}

/** Built-in layouts; a category without a custom graph file runs on its kind's default. */
export const DEFAULT_LAYOUTS: Record<AssetKind, GraphLayout> = {
  agent: {
    name: 'default-agent',
    entry: 'intake',
    nodes: [
      { id: 'intake', kind: 'llm', name: 'Intake' },
      { id: 'analysis', kind: 'llm', name: 'Analysis' },
      { id: 'gate', kind: 'gate', name: 'Approval' },
      { id: 'output', kind: 'llm', name: 'Output' },
      { id: 'cancelled', kind: 'terminal', name: 'Cancelled' },
    ],
    edges: [
      { from: 'intake', to: 'analysis' },
      { from: 'analysis', to: 'gate' },
      { from: 'gate', to: 'output', condition: 'approved' },
      { from: 'gate', to: 'cancelled', condition: 'rejected' },
    ],
  },
  command: {
    name: 'default-command',
    entry: 'dispatch',
    nodes: [
      { id: 'dispatch', kind: 'llm', name: 'Dispatch' },
      { id: 'execute', kind: 'llm', name: 'Execute' },
      { id: 'summarize', kind: 'llm', name: 'Summarize' },
    ],
    edges: [
      { from: 'dispatch', to: 'execute' },
      { from: 'execute', to: 'summarize' },
    ],
  },
};

/** Categories that need no graph file of their own. */
export const BUILT_IN_CATEGORIES = ['general', 'review', 'docs', 'analysis', 'ops', 'release'] as const;

const RouteSchema = z.object({
  condition: RouteConditionSchema,
  match: z.string().default(''),
  target: z.string().min(1),
  priority: z.number().int().min(0).default(100),
});

const PhaseFrontmatterSchema = z
  .object({
    name: z.string().min(1).optional(),
    description: z.string().default(''),
    expected_output: z.string().default(''),
    classification_options: z.array(z.string().min(1)).default([]),
    approval_question: z.string().min(1).optional(),
    required_approval_context: z.array(z.string().min(1)).default([]),
    routes: z.array(RouteSchema).default([]),
  })
  .strict();

const FrontmatterSchema = z
  .object({
    name: z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'must be lowercase letters, digits and dashes'),
    description: z.string().min(1),
    category: z.string().min(1).default('general'),
    phases: z.record(z.string(), PhaseFrontmatterSchema).default({}),
  })
  .strict();

function fail(file: string, field: string, message: string): never {
  throw new AssetError(`${path.relative(process.cwd(), file)}: ${field}: ${message}`);
}

function zodFail(file: string, error: z.ZodError, prefix = ''): never {
  const issue = error.issues[0]!;
  const field = [prefix, ...issue.path.map(String)].filter(Boolean).join('.') || '(frontmatter)';
  fail(file, field, issue.message);
}

/** Splits `---\nyaml\n---\nbody`; the YAML must be a mapping. */
export function parseFrontmatter(file: string, text: string): { data: unknown; body: string } {
  const match = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/.exec(text);
  if (!match) fail(file, '(frontmatter)', 'the file must start with a --- YAML frontmatter block ---');
  let data: unknown;
  try {
    data = YAML.parse(match[1]!);
  } catch (error) {
    fail(file, '(frontmatter)', `invalid YAML: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) fail(file, '(frontmatter)', 'must be a YAML mapping');
  return { data, body: match[2]!.trim() };
}

/** A set of nodes that can loop forever: some node of the graph from which no end is reachable. */
export function checkLayout(file: string, layout: GraphLayout): void {
  const ids = new Set(layout.nodes.map((n) => n.id));
  if (ids.size !== layout.nodes.length) fail(file, 'nodes', 'node ids must be unique');
  if (!ids.has(layout.entry)) fail(file, 'entry', `node "${layout.entry}" is not in the graph`);
  layout.edges.forEach((edge, i) => {
    if (!ids.has(edge.from)) fail(file, `edges[${i}].from`, `node "${edge.from}" is not in the graph`);
    if (!ids.has(edge.to)) fail(file, `edges[${i}].to`, `node "${edge.to}" is not in the graph`);
    const fromKind = layout.nodes.find((n) => n.id === edge.from)!.kind;
    if (edge.condition && !['approved', 'rejected'].includes(edge.condition)) {
      fail(file, `edges[${i}].condition`, `unknown condition "${edge.condition}" (approved or rejected)`);
    }
    if (edge.condition && fromKind !== 'gate') fail(file, `edges[${i}].condition`, `only a gate's edges carry conditions; "${edge.from}" is a ${fromKind} node`);
    if (fromKind === 'terminal') fail(file, `edges[${i}].from`, `terminal node "${edge.from}" cannot have outgoing edges`);
  });
  for (const node of layout.nodes.filter((n) => n.kind === 'gate')) {
    const out = layout.edges.filter((e) => e.from === node.id);
    if (!out.some((e) => e.condition === 'approved')) fail(file, 'edges', `gate "${node.id}" has no approved edge`);
    if (out.some((e) => !e.condition)) fail(file, 'edges', `gate "${node.id}" may only have approved and rejected edges`);
  }
  for (const node of layout.nodes.filter((n) => n.kind === 'llm')) {
    if (layout.edges.filter((e) => e.from === node.id).length > 1) {
      fail(file, 'edges', `node "${node.id}" has more than one outgoing edge: branching is done by routing rules`);
    }
  }
  // Nodes that reach an end (a node without outgoing edges), walking edges backwards.
  const canEnd = new Set(layout.nodes.filter((n) => !layout.edges.some((e) => e.from === n.id)).map((n) => n.id));
  for (let grew = true; grew; ) {
    grew = false;
    for (const edge of layout.edges) {
      if (canEnd.has(edge.to) && !canEnd.has(edge.from)) {
        canEnd.add(edge.from);
        grew = true;
      }
    }
  }
  const stuck = layout.nodes.filter((n) => !canEnd.has(n.id)).map((n) => n.id);
  if (stuck.length) fail(file, 'edges', `graph cycle without an exit through ${stuck.map((id) => `"${id}"`).join(', ')}`);
}

function readLayouts(graphsDir: string): Map<string, { layout: GraphLayout; file: string }> {
  const layouts = new Map<string, { layout: GraphLayout; file: string }>();
  if (!fs.existsSync(graphsDir)) return layouts;
  for (const name of fs.readdirSync(graphsDir).filter((f) => f.endsWith('.json')).sort()) {
    const file = path.join(graphsDir, name);
    let raw: unknown;
    try {
      raw = JSON.parse(fs.readFileSync(file, 'utf8'));
    } catch (error) {
      fail(file, '(json)', error instanceof Error ? error.message : String(error));
    }
    const parsed = GraphLayoutSchema.safeParse(raw);
    if (!parsed.success) zodFail(file, parsed.error);
    const expected = path.basename(name, '.json');
    if (parsed.data.name !== expected) fail(file, 'name', `must be "${expected}", the file's name`);
    checkLayout(file, parsed.data);
    layouts.set(expected, { layout: parsed.data, file });
  }
  return layouts;
}

function compileAsset(
  file: string,
  relative: string,
  kind: AssetKind,
  text: string,
  layouts: Map<string, { layout: GraphLayout }>,
): { manifest: Manifest; layout: GraphLayout } {
  const { data, body } = parseFrontmatter(file, text);
  const parsed = FrontmatterSchema.safeParse(data);
  if (!parsed.success) zodFail(file, parsed.error);
  const front = parsed.data;
  if (!body) fail(file, '(body)', 'the instructions (markdown after the frontmatter) are empty');

  let layout: GraphLayout;
  const custom = layouts.get(front.category);
  if (custom) {
    if (kind !== 'agent') fail(file, 'category', `custom graph layouts are for agents; "${front.category}" is one`);
    layout = custom.layout;
  } else if ((BUILT_IN_CATEGORIES as readonly string[]).includes(front.category)) {
    layout = DEFAULT_LAYOUTS[kind];
  } else {
    fail(file, 'category', `unknown category "${front.category}": use one of ${BUILT_IN_CATEGORIES.join(', ')} or add assets/graphs/${front.category}.json`);
  }

  const ids = new Set(layout.nodes.map((n) => n.id));
  for (const key of Object.keys(front.phases)) {
    if (!ids.has(key)) fail(file, `phases.${key}`, `node "${key}" is not in graph "${layout.name}"`);
  }
  const phases: Phase[] = layout.nodes.map((node) => {
    const given = front.phases[node.id];
    given?.routes.forEach((route, i) => {
      if (!ids.has(route.target)) fail(file, `phases.${node.id}.routes[${i}].target`, `node "${route.target}" is not in graph "${layout.name}"`);
      if (node.kind !== 'llm') fail(file, `phases.${node.id}.routes`, `"${node.id}" is a ${node.kind} node: its edges are defined by the graph`);
    });
    if (given?.approval_question && node.kind !== 'gate') fail(file, `phases.${node.id}.approval_question`, `"${node.id}" is not a gate`);
    return {
      id: node.id,
      name: given?.name ?? node.name ?? node.id,
      kind: node.kind,
      description: given?.description ?? '',
      expected_output: given?.expected_output ?? '',
      classification_options: given?.classification_options ?? [],
      ...(given?.approval_question ? { approval_question: given.approval_question } : {}),
      required_approval_context: given?.required_approval_context ?? [],
      routes: given?.routes ?? [],
    };
  });

  const manifest = ManifestSchema.parse({
    kind,
    name: front.name,
    description: front.description,
    category: front.category,
    graph: layout.name,
    instructions: body,
    phases,
    source: relative,
  });
  return { manifest, layout };
}

export interface CompiledAssets {
  manifests: Manifest[];
  layouts: GraphLayout[];
  contract: object;
}

/** Reads every asset under `assetsDir`; throws an AssetError naming the file and field on the first problem. */
export function compileAssets(assetsDir: string): CompiledAssets {
  const layouts = readLayouts(path.join(assetsDir, 'graphs'));
  const manifests: Manifest[] = [];
  const used = new Map<string, GraphLayout>();
  const names = new Map<string, string>();
  for (const [kind, folder] of [['agent', 'agents'], ['command', 'commands']] as const) {
    const dir = path.join(assetsDir, folder);
    if (!fs.existsSync(dir)) continue;
    for (const name of fs.readdirSync(dir).filter((f) => f.endsWith('.md')).sort()) {
      const file = path.join(dir, name);
      const relative = path.join('assets', folder, name);
      const { manifest, layout } = compileAsset(file, relative, kind, fs.readFileSync(file, 'utf8'), layouts);
      const clash = names.get(manifest.name);
      if (clash) fail(file, 'name', `"${manifest.name}" is already used by ${clash}`);
      names.set(manifest.name, relative);
      manifests.push(manifest);
      used.set(layout.name, layout);
    }
  }
  const contract = {
    assets: Object.fromEntries(
      manifests.map((m) => {
        const layout = used.get(m.graph)!;
        return [
          m.name,
          {
            kind: m.kind,
            category: m.category,
            graph: m.graph,
            entry: layout.entry,
            phases: m.phases.map(({ id, name, kind, description, expected_output, classification_options, routes }) => ({
              id,
              name,
              kind,
              description,
              expected_output,
              classification_options,
              outgoing: layout.edges.filter((e) => e.from === id),
              routes,
            })),
            gates: m.phases
              .filter((p) => p.kind === 'gate')
              .map((p) => ({ node: p.id, question: p.approval_question ?? null, required_context: p.required_approval_context })),
          },
        ];
      }),
    ),
  };
  return { manifests, layouts: [...used.values()], contract };
}

/** Writes into a fresh folder beside `outDir`, then swaps it in: a failed build leaves the old output whole. */
export function writeGenerated(outDir: string, compiled: CompiledAssets): void {
  const staging = `${outDir}.tmp-${process.pid}`;
  fs.rmSync(staging, { recursive: true, force: true });
  for (const sub of ['manifests/agents', 'manifests/commands', 'graphs']) fs.mkdirSync(path.join(staging, sub), { recursive: true });
  const write = (file: string, value: unknown) => fs.writeFileSync(path.join(staging, file), `${JSON.stringify(value, null, 2)}\n`);
  for (const m of compiled.manifests) write(`manifests/${m.kind === 'agent' ? 'agents' : 'commands'}/${m.name}.json`, m);
  for (const layout of compiled.layouts) write(`graphs/${layout.name}.json`, layout);
  write('runtime-contract.json', compiled.contract);
  fs.writeFileSync(path.join(staging, '.gitkeep'), '');
  const old = `${outDir}.old-${process.pid}`;
  if (fs.existsSync(outDir)) fs.renameSync(outDir, old);
  fs.renameSync(staging, outDir);
  fs.rmSync(old, { recursive: true, force: true });
}
