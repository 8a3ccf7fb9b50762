import fs from 'node:fs';
import path from 'node:path';
import YAML, { isCollection, isPair, Lexer, LineCounter, Parser, type Alias, type Node } from 'yaml';
import { z } from 'zod';
import {
  AssetKindSchema,
  GraphLayoutSchema,
  NODE_ID_PATTERN,
  ManifestSchema,
  RouteConditionSchema,
  RoutingRuleSchema,
  type AssetKind,
  type GraphLayout,
  type Manifest,
  type Phase,
  type RoutingRule,
} from '../contracts/assets';
import { DEFAULT_GATE_POLICY } from '../contracts/gate-policy';
import { compilePattern } from './route-pattern';
import { errorMessage } from '../contracts/errors';
import { check, fail, fieldName, parseWith, report, stopAtProblems, type AssetSource } from './asset-error';
import { fieldLines } from './field-lines';
import { GATE_OPTION_FIELDS, GATE_OPTION_NAMES, gatePolicy } from './gate-options';
import {
  declaredServers,
  PHASE_TOOL_FIELDS,
  phaseToolsOf,
  toolsDeclarationOf,
  ToolsFrontmatterSchema,
  type ServerRules,
} from './tool-declarations';

/**
 * Turns asset files into what the server loads:
 *   assets/agents/*.md, assets/commands/*.md  (YAML frontmatter + markdown instructions)
 *   assets/graphs/<name>.json                 (custom layouts, chosen by an agent's `category`)
 * into generated/manifests/{agents,commands}/<name>.json and generated/graphs/<layout>.json: the runtime
 * contract the server loads (GET /agents/{name}/graph-definition shows its projection).
 *
 * A graph ends at a node without outgoing edges; there is no explicit end node, and `__end__` is not a
 * valid edge target. Only a gate's edges carry a condition: exactly one `approved` and one `rejected`,
 * the rejected one leading to a terminal node (the run's cancellation). Branching elsewhere is done by
 * routing rules, evaluated at run time.
 */

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

const isNodeOf = (kind: AssetKind) => (id: string) => DEFAULT_LAYOUTS[kind].nodes.some((n) => n.id === id);

/**
 * What a source that no folder and no `kind` field place is: a command when its phases are nodes of the default
 * command layout and none of the agent layout's, else an agent.
 */
export function kindOfPhases(phaseIds: readonly string[]): AssetKind {
  return phaseIds.some(isNodeOf('command')) && !phaseIds.some(isNodeOf('agent')) ? 'command' : 'agent';
}

/**
 * Caps on one source, whose text may be a user's (a stored agent): its size in UTF-8 bytes, how deep its frontmatter
 * nests (the top mapping is level 1), and how many routes a phase has.
 */
export const MAX_SOURCE_BYTES = 65536;
const MAX_DEPTH = 12;
const MAX_ROUTES = 32;
/** How often a shipped file's YAML aliases may be expanded (the yaml package's default); stored text has none. */
const MAX_ALIAS_COUNT = 100;

const GATE_CONDITIONS = ['approved', 'rejected'] as const;

const RouteFrontmatterSchema = RoutingRuleSchema.extend({
  // Checked by hand, to tell a gate's conditions apart from a typo.
  condition: z.string(),
  // Defaults to the rule's position, so a list of rules is evaluated in the order it is written.
  priority: RoutingRuleSchema.shape.priority.optional(),
}).strict();

const PhaseFrontmatterSchema = z
  .object({
    name: z.string().min(1).optional(),
    description: z.string().default(''),
    expected_output: z.string().default(''),
    classification_options: z.array(z.string().min(1)).default([]),
    approval_question: z.string().min(1).optional(),
    required_approval_context: z.array(z.string().min(1)).default([]),
    routes: z
      .array(RouteFrontmatterSchema)
      .max(MAX_ROUTES, `too many routes: at most ${MAX_ROUTES} per phase`)
      .default([]),
    ...GATE_OPTION_FIELDS,
    ...PHASE_TOOL_FIELDS,
  })
  .strict();
type PhaseFrontmatter = z.infer<typeof PhaseFrontmatterSchema>;
const UNDESCRIBED_PHASE = PhaseFrontmatterSchema.parse({});

const FrontmatterSchema = z
  .object({
    name: z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'must be lowercase letters, digits and dashes'),
    // A shipped file's folder says what it is; a stored source says it here, or its phases do.
    kind: AssetKindSchema.optional(),
    description: z.string().min(1),
    category: z.string().min(1).default('general'),
    // `cancelled:` with nothing under it is a phase described by its layout alone.
    phases: z
      .record(
        z.string(),
        PhaseFrontmatterSchema.nullable().transform((p) => p ?? UNDESCRIBED_PHASE),
      )
      .default({}),
    tools: ToolsFrontmatterSchema.default({ servers: {}, policies: {} }),
  })
  .strict();

/** The frontmatter's YAML starts on the file's second line, below the opening `---`. */
const FRONTMATTER_FIRST_LINE = 2;

/**
 * The yaml package composes a document recursively: text nested thousands of levels deep exhausts the stack, and
 * where that happens can bring the whole process down. Its parser keeps its own stack, so the depth is measured
 * there first, against a bound loose enough that only text nested far deeper than MAX_DEPTH reaches it.
 */
const PARSER_DEPTH_BOUND = 4 * MAX_DEPTH;

/** The line (in the YAML) at which the parser's stack outgrows its bound, if it does. */
function lineNestedTooDeep(yaml: string): number | undefined {
  const lineCounter = new LineCounter();
  lineCounter.addNewLine(0);
  const parser = new Parser(lineCounter.addNewLine);
  for (const lexeme of new Lexer().lex(yaml)) {
    // The tokens the parser completes are not needed: only how deep it is.
    Array.from(parser.next(lexeme));
    if (parser.stack.length > PARSER_DEPTH_BOUND) return lineCounter.linePos(parser.offset).line;
  }
  return undefined;
}

/** The first collection nested deeper than MAX_DEPTH, a key's as well as a value's. */
function tooDeep(node: unknown, level: number): Node | undefined {
  if (!isCollection(node)) return undefined;
  if (level > MAX_DEPTH) return node;
  for (const item of node.items) {
    for (const child of isPair(item) ? [item.key, item.value] : [item]) {
      const deep = tooDeep(child, level + 1);
      if (deep) return deep;
    }
  }
  return undefined;
}

/**
 * Splits `---\nyaml\n---\nbody`; the YAML must be a mapping. The source it returns knows the line of each field, so
 * a problem found later still points at the line to fix. Stored text may not use YAML aliases.
 */
export function parseFrontmatter(
  base: AssetSource,
  text: string,
  { stored }: { stored: boolean },
): { data: object; body: string; bodyLine: number; source: AssetSource } {
  const match = /^\uFEFF?---\r?\n([\s\S]*?)\r?\n---(?:\r?\n([\s\S]*))?$/.exec(text);
  if (!match) fail(base, '(frontmatter)', 'the file must start with a --- YAML frontmatter block ---', 1);
  const yaml = match[1]!;
  const toFileLine = (line: number) => line + FRONTMATTER_FIRST_LINE - 1;
  const deepLine = lineNestedTooDeep(yaml);
  if (deepLine !== undefined)
    fail(base, '(frontmatter)', `nests deeper than ${MAX_DEPTH} levels`, toFileLine(deepLine));
  const lineCounter = new LineCounter();
  // A warning about a user's text is no news for the server's log.
  const doc = YAML.parseDocument(yaml, { lineCounter, logLevel: 'error' });
  const source: AssetSource = { ...base, lineOf: fieldLines(doc, lineCounter, FRONTMATTER_FIRST_LINE) };
  const lineOfNode = (node: Node) => toFileLine(lineCounter.linePos(node.range![0]).line);
  const problem = doc.errors[0];
  if (problem) {
    const message = problem.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
    fail(source, '(frontmatter)', `invalid YAML: ${message}`, toFileLine(lineCounter.linePos(problem.pos[0]).line));
  }
  const deep = tooDeep(doc.contents, 1);
  if (deep) fail(source, '(frontmatter)', `nests deeper than ${MAX_DEPTH} levels`, lineOfNode(deep));
  let alias: Alias | undefined;
  YAML.visit(doc, {
    Alias: (_key, node) => {
      alias = node;
      return YAML.visit.BREAK;
    },
  });
  if (alias && stored)
    fail(
      source,
      '(frontmatter)',
      'a stored agent uses no YAML aliases (*name): write the value out',
      lineOfNode(alias),
    );
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: stored ? 0 : MAX_ALIAS_COUNT });
  } catch (error) {
    if (!(error instanceof ReferenceError) || !alias) throw error;
    fail(
      source,
      '(frontmatter)',
      `its YAML aliases (*name) expand too far: at most ${MAX_ALIAS_COUNT} expansions`,
      lineOfNode(alias),
    );
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    fail(source, '(frontmatter)', 'must be a YAML mapping', FRONTMATTER_FIRST_LINE);
  // The instructions start below the closing `---`; an empty body is reported at that line.
  const bodyLine = FRONTMATTER_FIRST_LINE + yaml.split('\n').length;
  return { data, body: (match[2] ?? '').trim(), bodyLine, source };
}

// Where a run goes after a node without a next node; LangGraph reserves the name, so no node has it.
const END = '__end__';

/** Nodes from which the run can never reach END: they loop forever. */
function nodesWithoutExit(ids: readonly string[], successors: (id: string) => readonly string[]): string[] {
  const canEnd = new Set([END]);
  for (let grew = true; grew;) {
    grew = false;
    for (const id of ids) {
      if (!canEnd.has(id) && successors(id).some((next) => canEnd.has(next))) {
        canEnd.add(id);
        grew = true;
      }
    }
  }
  return ids.filter((id) => !canEnd.has(id));
}

const quoted = (ids: readonly string[]) => ids.map((id) => `"${id}"`).join(', ');
const aKind = (kind: string) => `${kind === 'llm' ? 'an' : 'a'} ${kind} node`;

/**
 * Checks a layout the runtime can execute and returns it with its nodes in graph order
 * (breadth-first from the entry), the order phases are listed and drawn in.
 */
export function checkLayout(source: AssetSource, layout: GraphLayout): GraphLayout {
  const byId = new Map<string, GraphLayout['nodes'][number]>();
  layout.nodes.forEach((node, i) => {
    if (!NODE_ID_PATTERN.test(node.id))
      fail(
        source,
        ['nodes', i, 'id'],
        `"${node.id}" must be lowercase letters, digits, _ and -, starting with a letter`,
      );
    if (byId.has(node.id)) fail(source, ['nodes', i, 'id'], `node "${node.id}" is defined twice`);
    byId.set(node.id, node);
  });
  if (!byId.has(layout.entry)) fail(source, ['entry'], `node "${layout.entry}" is not in graph "${layout.name}"`);
  layout.edges.forEach((edge, i) => {
    for (const end of ['from', 'to'] as const) {
      if (!byId.has(edge[end])) fail(source, ['edges', i, end], `node "${edge[end]}" is not in graph "${layout.name}"`);
    }
    const from = byId.get(edge.from)!;
    if (from.kind === 'terminal')
      fail(source, ['edges', i, 'from'], `terminal node "${edge.from}" cannot have outgoing edges`);
    if (edge.condition !== undefined && !(GATE_CONDITIONS as readonly string[]).includes(edge.condition)) {
      fail(
        source,
        ['edges', i, 'condition'],
        `unknown condition "${edge.condition}": a gate's edges are approved or rejected, other branching is done by routing rules`,
      );
    }
    if (edge.condition !== undefined && from.kind !== 'gate') {
      fail(
        source,
        ['edges', i, 'condition'],
        `only a gate's edges carry a condition; "${edge.from}" is ${aKind(from.kind)}`,
      );
    }
  });
  const outgoing = (id: string) => layout.edges.filter((e) => e.from === id);
  for (const node of layout.nodes) {
    const out = outgoing(node.id);
    if (node.kind === 'llm' && out.length > 1) {
      fail(
        source,
        ['edges'],
        `node "${node.id}" has ${out.length} outgoing edges: an llm node has at most one, branching is done by routing rules`,
      );
    }
    if (node.kind !== 'gate') continue;
    for (const condition of GATE_CONDITIONS) {
      const edges = out.filter((e) => e.condition === condition);
      if (edges.length !== 1)
        fail(source, ['edges'], `gate "${node.id}" needs exactly one ${condition} edge, it has ${edges.length}`);
    }
    if (out.length !== 2) fail(source, ['edges'], `gate "${node.id}" may only have its approved and rejected edges`);
    const rejected = out.find((e) => e.condition === 'rejected')!.to;
    if (byId.get(rejected)!.kind !== 'terminal') {
      fail(
        source,
        ['edges'],
        `gate "${node.id}": the rejected edge must lead to a terminal node, "${rejected}" is ${aKind(byId.get(rejected)!.kind)}`,
      );
    }
  }

  const order = [layout.entry];
  for (let i = 0; i < order.length; i++) {
    for (const edge of outgoing(order[i]!)) if (!order.includes(edge.to)) order.push(edge.to);
  }
  const unreachable = layout.nodes.filter((n) => !order.includes(n.id)).map((n) => n.id);
  if (unreachable.length)
    fail(source, ['nodes'], `${quoted(unreachable)} cannot be reached from the entry "${layout.entry}"`);

  const stuck = nodesWithoutExit(order, (id) => (outgoing(id).length ? outgoing(id).map((e) => e.to) : [END]));
  if (stuck.length) fail(source, ['edges'], `graph cycle without an exit through ${quoted(stuck)}`);
  return { ...layout, nodes: order.map((id) => byId.get(id)!) };
}

/** A graph file's problems point at their line too: JSON is YAML, so the same walk finds a field's line. */
function jsonSource(file: string, text: string): AssetSource {
  const lineCounter = new LineCounter();
  const doc = YAML.parseDocument(text, { lineCounter });
  // What JSON.parse accepts and YAML does not (rare) is still reported, without its line.
  return doc.errors.length ? { file } : { file, lineOf: fieldLines(doc, lineCounter, 1) };
}

export const isBuiltInLayout = (name: string) => Object.values(DEFAULT_LAYOUTS).some((l) => l.name === name);

function readCustomLayouts(graphsDir: string): Map<string, GraphLayout> {
  const layouts = new Map<string, GraphLayout>();
  if (!fs.existsSync(graphsDir)) return layouts;
  for (const fileName of fs
    .readdirSync(graphsDir)
    .filter((f) => f.endsWith('.json'))
    .sort()) {
    const file = path.join(graphsDir, fileName);
    const text = fs.readFileSync(file, 'utf8');
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (error) {
      fail({ file }, '(json)', errorMessage(error));
    }
    const source = jsonSource(file, text);
    const parsed = parseWith(source, GraphLayoutSchema, raw);
    const expected = path.basename(fileName, '.json');
    if (parsed.name !== expected) fail(source, ['name'], `must be "${expected}", the file's name`);
    if (isBuiltInLayout(expected)) fail(source, ['name'], `"${expected}" is a built-in layout`);
    layouts.set(expected, checkLayout(source, parsed));
  }
  return layouts;
}

function layoutFor(
  source: AssetSource,
  kind: AssetKind,
  category: string,
  customLayouts: ReadonlyMap<string, GraphLayout>,
): GraphLayout {
  const custom = customLayouts.get(category);
  if (custom) {
    if (kind !== 'agent') fail(source, ['category'], `custom graph layouts are for agents; "${category}" is one`);
    return custom;
  }
  if ((BUILT_IN_CATEGORIES as readonly string[]).includes(category)) return DEFAULT_LAYOUTS[kind];
  fail(
    source,
    ['category'],
    `unknown category "${category}": use one of ${BUILT_IN_CATEGORIES.join(', ')} or add assets/graphs/${category}.json`,
  );
}

/**
 * The rules of one phase with their priorities, checked as the runtime checks saved overrides, each rule on its own;
 * undefined where one of them has a problem.
 */
function routesOf(
  source: AssetSource,
  node: GraphLayout['nodes'][number],
  given: PhaseFrontmatter,
  layout: GraphLayout,
): RoutingRule[] | undefined {
  const field = ['phases', node.id, 'routes'];
  if (given.routes.length && node.kind !== 'llm') {
    report(source, field, `"${node.id}" is ${aKind(node.kind)}: its edges are defined by graph "${layout.name}"`);
    return undefined;
  }
  const priorities = new Map<number, number>();
  const ruleOf = (route: PhaseFrontmatter['routes'][number], i: number): RoutingRule => {
    const at = [...field, i];
    if ((GATE_CONDITIONS as readonly string[]).includes(route.condition)) {
      fail(
        source,
        [...at, 'condition'],
        `"${route.condition}" is a gate decision, not a routing rule: only a gate node's edges in graph "${layout.name}" carry it`,
      );
    }
    const condition = RouteConditionSchema.safeParse(route.condition);
    if (!condition.success)
      fail(
        source,
        [...at, 'condition'],
        `unknown condition "${route.condition}": use one of ${RouteConditionSchema.options.join(', ')}`,
      );
    if (!layout.nodes.some((n) => n.id === route.target))
      fail(source, [...at, 'target'], `node "${route.target}" is not in graph "${layout.name}"`);
    if (condition.data !== 'always' && route.match === '')
      fail(source, [...at, 'match'], `a ${condition.data} rule needs a match value`);
    if (condition.data === 'regex') {
      try {
        compilePattern(route.match);
      } catch (error) {
        fail(source, [...at, 'match'], `invalid regular expression: ${errorMessage(error)}`);
      }
    }
    const priority = route.priority ?? i;
    const earlier = priorities.get(priority);
    if (earlier !== undefined)
      fail(source, [...at, 'priority'], `priority ${priority} is already used by ${fieldName([...field, earlier])}`);
    priorities.set(priority, i);
    return { condition: condition.data, match: route.match, target: route.target, priority };
  };
  const rules = given.routes.map((route, i) => check(source, () => ruleOf(route, i), undefined));
  return rules.every((rule) => rule !== undefined) ? rules : undefined;
}

/** A phase's fields that only some kinds of node take, and the phases a gate shows. */
function checkPhaseFields(
  source: AssetSource,
  node: GraphLayout['nodes'][number],
  given: PhaseFrontmatter,
  layout: GraphLayout,
): void {
  const at = ['phases', node.id];
  if (node.kind !== 'gate') {
    if (given.approval_question) fail(source, [...at, 'approval_question'], `"${node.id}" is not a gate`);
    if (given.required_approval_context.length)
      fail(source, [...at, 'required_approval_context'], `"${node.id}" is not a gate`);
    for (const option of GATE_OPTION_NAMES) {
      if (given[option] !== undefined) fail(source, [...at, option], `"${node.id}" is not a gate`);
    }
  }
  if (node.kind !== 'llm' && given.classification_options.length) {
    fail(
      source,
      [...at, 'classification_options'],
      `"${node.id}" is ${aKind(node.kind)}: only llm nodes produce output to classify`,
    );
  }
  given.required_approval_context.forEach((item, i) => {
    if (layout.nodes.find((n) => n.id === item)?.kind !== 'llm')
      fail(source, [...at, 'required_approval_context', i], `"${item}" is not an llm node of graph "${layout.name}"`);
  });
}

/**
 * Where a run can go after a phase: the targets of the rules up to the first `always`, then, when no
 * rule matches, the static edge or the end of the run.
 */
function successors(layout: GraphLayout, phase: Phase): string[] {
  const rules = [...phase.routes].sort((a, b) => a.priority - b.priority);
  const always = rules.findIndex((r) => r.condition === 'always');
  if (always !== -1) return rules.slice(0, always + 1).map((r) => r.target);
  const edges = layout.edges.filter((e) => e.from === phase.id).map((e) => e.to);
  return [...rules.map((r) => r.target), ...(edges.length ? edges : [END])];
}

export interface CompileOptions extends ServerRules {
  /** A shipped file's kind, which its folder gives; without one, the `kind` field says it, or else the phases do. */
  folderKind?: AssetKind;
  /** Custom layouts by category; a built-in category runs on its kind's default layout. */
  layouts: ReadonlyMap<string, GraphLayout>;
  /** What the manifest gives as its `source`. */
  sourcePath: string;
}

/** A shipped file's kind is its folder's; a `kind` field may only say the same. */
function kindOf(source: AssetSource, given: AssetKind | undefined, phaseIds: string[], folderKind?: AssetKind) {
  if (!folderKind) return given ?? kindOfPhases(phaseIds);
  if (given !== undefined && given !== folderKind) {
    const what = folderKind === 'agent' ? 'an agent' : 'a command';
    report(source, ['kind'], `"${given}" does not match its folder: a file in ${folderKind}s/ is ${what}`);
  }
  return folderKind;
}

/**
 * One asset's text into its manifest. When `base` collects problems, the checks that stand on their own each report
 * theirs and the compile goes on; whatever the mode, a problem that leaves nothing to check further stops it.
 */
export function compileAsset(
  base: AssetSource,
  text: string,
  options: CompileOptions,
): { manifest: Manifest; source: AssetSource } {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > MAX_SOURCE_BYTES) fail(base, '(source)', `is ${bytes} bytes: at most ${MAX_SOURCE_BYTES} (64 KiB)`);
  const { data, body, bodyLine, source } = parseFrontmatter(base, text, options);
  const front = parseWith(source, FrontmatterSchema, data);
  if (!body) report(source, '(body)', 'the instructions (markdown after the frontmatter) are empty', bodyLine);
  const kind = kindOf(source, front.kind, Object.keys(front.phases), options.folderKind);

  const layout = layoutFor(source, kind, front.category, options.layouts);
  const byId = new Map(layout.nodes.map((n) => [n.id, n]));
  // A phase the graph lacks is reported and left out: the phases compiled below are the graph's nodes.
  for (const key of Object.keys(front.phases)) {
    if (!byId.has(key)) report(source, ['phases', key], `node "${key}" is not in graph "${layout.name}"`);
  }
  const tools = toolsDeclarationOf(source, front.tools, options);
  const declared = declaredServers(front.tools);
  const shownBy = (gate: string) => front.phases[gate]?.required_approval_context ?? [];

  let routesChecked = true;
  const phases: Phase[] = layout.nodes.map((node) => {
    const given = front.phases[node.id] ?? UNDESCRIBED_PHASE;
    const at = ['phases', node.id];
    check(source, () => checkPhaseFields(source, node, given, layout), undefined);
    const gateFields =
      node.kind === 'gate'
        ? {
            approval_question: given.approval_question ?? defaultQuestion(layout, node.id, front.phases),
            gate: check(source, () => gatePolicy(source, at, given, layout), DEFAULT_GATE_POLICY),
          }
        : {};
    const routes = routesOf(source, node, given, layout);
    if (!routes) routesChecked = false;
    return {
      id: node.id,
      name: given.name ?? node.name ?? node.id,
      kind: node.kind,
      description: given.description,
      expected_output: given.expected_output,
      classification_options: given.classification_options,
      ...gateFields,
      required_approval_context: given.required_approval_context,
      routes: routes ?? [],
      ...check(source, () => phaseToolsOf(source, node, given, declared, layout, shownBy), {}),
    };
  });

  // Where a rule has a problem, the graph it would draw is not known.
  if (routesChecked) {
    const phaseById = new Map(phases.map((p) => [p.id, p]));
    const stuck = nodesWithoutExit(
      phases.map((p) => p.id),
      (id) => successors(layout, phaseById.get(id)!),
    );
    if (stuck.length) {
      const routed = stuck.find((id) => phaseById.get(id)!.routes.length) ?? stuck[0]!;
      report(source, ['phases', routed, 'routes'], `graph cycle without an exit through ${quoted(stuck)}`);
    }
  }
  stopAtProblems(source);

  const manifest = ManifestSchema.parse({
    kind,
    name: front.name,
    description: front.description,
    category: front.category,
    graph: layout.name,
    instructions: body,
    phases,
    tools,
    source: options.sourcePath,
  });
  return { manifest, source };
}

/** A gate without its own question asks about the phase before it, as the approver sees that output. */
function defaultQuestion(layout: GraphLayout, gate: string, given: Record<string, PhaseFrontmatter>): string {
  const before = layout.edges.filter((e) => e.to === gate).map((e) => e.from);
  if (before.length !== 1) return 'Approve the result so far and continue?';
  const node = layout.nodes.find((n) => n.id === before[0])!;
  return `Approve the result of ${given[node.id]?.name ?? node.name ?? node.id} and continue?`;
}

export interface CompiledAssets {
  manifests: Manifest[];
  /** Every layout, built-in and custom, used or not. */
  layouts: GraphLayout[];
}

/** Reads every asset under `assetsDir`; throws an AssetError naming the file, line and field of the first problem. */
export function compileAssets(assetsDir: string): CompiledAssets {
  if (!fs.statSync(assetsDir, { throwIfNoEntry: false })?.isDirectory())
    fail({ file: assetsDir }, '(folder)', 'no such assets folder');
  const customLayouts = readCustomLayouts(path.join(assetsDir, 'graphs'));
  const manifests: Manifest[] = [];
  const sources = new Map<string, string>();
  for (const [kind, folder] of [
    ['agent', 'agents'],
    ['command', 'commands'],
  ] as const) {
    const dir = path.join(assetsDir, folder);
    if (!fs.existsSync(dir)) continue;
    for (const fileName of fs
      .readdirSync(dir)
      .filter((f) => f.endsWith('.md'))
      .sort()) {
      const file = path.join(dir, fileName);
      const sourcePath = path.posix.join('assets', folder, fileName);
      const { manifest, source } = compileAsset({ file }, fs.readFileSync(file, 'utf8'), {
        folderKind: kind,
        layouts: customLayouts,
        // The build knows no instance: a shipped file that names a registered server is refused.
        registry: new Map(),
        stored: false,
        sourcePath,
      });
      // Agents and commands share one namespace: both run through POST /graphs/{name}/run.
      const clash = sources.get(manifest.name);
      if (clash) fail(source, ['name'], `"${manifest.name}" is already used by ${clash}`);
      sources.set(manifest.name, sourcePath);
      manifests.push(manifest);
    }
  }
  const layouts = new Map([...Object.values(DEFAULT_LAYOUTS), ...customLayouts.values()].map((l) => [l.name, l]));
  return { manifests, layouts: [...layouts.values()] };
}

const errno = (error: unknown) => (error as NodeJS.ErrnoException).code;

/**
 * Writes into a fresh folder beside `outDir`, then swaps it in: a failed build leaves the old output
 * whole, and a reader sees either the old or the new folder, never a mix.
 */
export function writeGenerated(outDir: string, compiled: CompiledAssets): void {
  fs.mkdirSync(path.dirname(outDir), { recursive: true });
  const staging = fs.mkdtempSync(path.join(path.dirname(outDir), `.${path.basename(outDir)}-`));
  try {
    for (const sub of ['manifests/agents', 'manifests/commands', 'graphs'])
      fs.mkdirSync(path.join(staging, sub), { recursive: true });
    const write = (file: string, value: unknown) =>
      fs.writeFileSync(path.join(staging, file), `${JSON.stringify(value, null, 2)}\n`);
    for (const m of compiled.manifests)
      write(`manifests/${m.kind === 'agent' ? 'agents' : 'commands'}/${m.name}.json`, m);
    for (const layout of compiled.layouts) write(`graphs/${layout.name}.json`, layout);
    // The repository keeps the empty generated/ folder through this file.
    fs.writeFileSync(path.join(staging, '.gitkeep'), '');
    swapIn(staging, outDir);
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
}

/** Several builds may swap the same folder at once (`npm test` runs one as pretest): the last one wins. */
function swapIn(staging: string, outDir: string): void {
  const aside = `${staging}-old`;
  for (let attempt = 1; ; attempt++) {
    try {
      fs.renameSync(outDir, aside);
    } catch (error) {
      if (errno(error) !== 'ENOENT') throw error;
    }
    try {
      fs.renameSync(staging, outDir);
      return;
    } catch (error) {
      // Another build put its output in place in between: move that one aside too and retry.
      if (!['ENOTEMPTY', 'EEXIST'].includes(errno(error) ?? '') || attempt === 5) throw error;
    } finally {
      fs.rmSync(aside, { recursive: true, force: true });
    }
  }
}
