import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { loadCatalog } from './catalog';
import { GraphLayoutSchema, ManifestSchema } from '../contracts/assets';
import { checkLayout, compileAssets, DEFAULT_LAYOUTS, writeGenerated } from './asset-compiler';
import { fieldName } from './asset-error';
import { DEFAULT_GATE_POLICY } from '../contracts/gate-policy';
import { DEFAULT_MAX_TOOL_CALLS, NO_TOOLS } from '../contracts/tools';
import { CONFIG_VARIABLES } from '../config';

const root = path.resolve(import.meta.dirname, '..', '..');
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

/** An assets folder with the given files, e.g. { 'agents/x.md': '...' }. */
function assets(files: Record<string, string>): string {
  const dir = tempDir('svc-assets-');
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

const asset = (front: string, body = 'Do the work well.') => `---\n${front}\n---\n${body}\n`;
const ok = 'name: demo\ndescription: A demo agent.\ncategory: review';
const withPhases = (phases: string) => asset(`${ok}\nphases:\n${phases}`);
const layout = (value: object) => JSON.stringify(value, null, 2);
const triageLike = {
  name: 'flow',
  entry: 'a',
  nodes: [
    { id: 'a', kind: 'llm' },
    { id: 'g', kind: 'gate' },
    { id: 'b', kind: 'llm' },
    { id: 'stop', kind: 'terminal' },
  ],
  edges: [
    { from: 'a', to: 'g' },
    { from: 'g', to: 'b', condition: 'approved' },
    { from: 'g', to: 'stop', condition: 'rejected' },
  ],
};

function error(files: Record<string, string>): string {
  try {
    compileAssets(assets(files));
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error('expected the build to fail');
}

const cli = (...args: string[]) => [
  path.join(root, 'node_modules', 'tsx', 'dist', 'cli.mjs'),
  'build/build-assets.ts',
  ...args,
];

describe('the shipped assets', () => {
  it('build into manifests and layouts that match the schemas and load in the server', () => {
    const out = path.join(tempDir('svc-gen-'), 'generated');
    writeGenerated(out, compileAssets(path.join(root, 'assets')));
    const read = (file: string) => JSON.parse(fs.readFileSync(path.join(out, file), 'utf8'));

    const manifests = ['agents', 'commands'].flatMap((kind) =>
      fs
        .readdirSync(path.join(out, 'manifests', kind))
        .map((f) => ManifestSchema.parse(read(`manifests/${kind}/${f}`))),
    );
    expect(manifests.map((m) => `${m.kind}:${m.name}`).sort()).toEqual([
      'agent:change-review',
      'agent:changelog-entry',
      'agent:incident-triage',
      'command:explain-error',
      'command:repo-summary',
    ]);
    for (const m of manifests) {
      expect(m.instructions.length).toBeGreaterThan(200);
      expect(m.source).toBe(`assets/${m.kind}s/${m.name}.md`);
      // A phase that publishes writes the approved text: it has no answer of its own to expect.
      for (const p of m.phases.filter((p) => p.kind === 'llm'))
        expect(p.description && (p.expected_output || p.publish), `${m.name}.${p.id}`).toBeTruthy();
    }
    expect(fs.readdirSync(path.join(out, 'graphs')).sort()).toEqual([
      'default-agent.json',
      'default-command.json',
      'triage.json',
    ]);
    for (const f of fs.readdirSync(path.join(out, 'graphs'))) GraphLayoutSchema.parse(read(`graphs/${f}`));

    const catalog = loadCatalog(out);
    expect(catalog.counts()).toEqual({ agents: 3, commands: 2 });
    expect(catalog.get('change-review')!.layout.nodes.map((n) => n.id)).toEqual([
      'intake',
      'analysis',
      'gate',
      'output',
      'cancelled',
    ]);
    expect(catalog.get('incident-triage')!.manifest.graph).toBe('triage');
    expect(catalog.get('incident-triage')!.manifest.phases.map((p) => p.id)).toEqual([
      'intake',
      'classify',
      'gate',
      'respond',
      'cancelled',
    ]);
    expect(catalog.get('repo-summary')!.manifest.phases.map((p) => p.id)).toEqual(['dispatch', 'execute', 'summarize']);

    // The generated manifests and layouts are the runtime contract: nothing else is written.
    expect(
      fs
        .readdirSync(out)
        .filter((f) => !f.startsWith('.'))
        .sort(),
    ).toEqual(['graphs', 'manifests']);
  });

  it('builds from the command line into generated/ with one summary line', () => {
    const out = path.join(tempDir('svc-gen-'), 'generated');
    const stdout = execFileSync(process.execPath, cli(path.join(root, 'assets'), out), { cwd: root, encoding: 'utf8' });
    expect(stdout).toMatch(/^build-assets: 3 agents, 2 commands, 3 graph layouts → \S+\n$/);
    expect(
      fs
        .readdirSync(out)
        .filter((f) => !f.startsWith('.'))
        .sort(),
    ).toEqual(['graphs', 'manifests']);
  });
});

describe('compiling', () => {
  it('fills in every node of the layout in graph order, with defaults', () => {
    const scrambled = { ...triageLike, nodes: [...triageLike.nodes].reverse() };
    const { manifests } = compileAssets(
      assets({
        'graphs/flow.json': layout(scrambled),
        'agents/demo.md': asset('name: demo\ndescription: A demo.\ncategory: flow\nphases:\n  a:\n    name: First'),
      }),
    );
    const [demo] = manifests;
    expect(demo!.phases.map((p) => p.id)).toEqual(['a', 'g', 'b', 'stop']);
    expect(demo!.phases[0]).toEqual({
      id: 'a',
      name: 'First',
      kind: 'llm',
      description: '',
      expected_output: '',
      classification_options: [],
      required_approval_context: [],
      routes: [],
    });
    expect(demo!.phases[1]).toMatchObject({
      kind: 'gate',
      name: 'g',
      approval_question: 'Approve the result of First and continue?',
      gate: { decide_role: 'member', approvals: 1, expiry: null },
    });
    expect(demo).toMatchObject({
      kind: 'agent',
      category: 'flow',
      graph: 'flow',
      instructions: 'Do the work well.',
      source: 'assets/agents/demo.md',
    });
  });

  it("reads a gate's options: who decides, how many approve, when it expires and what happens then", () => {
    const gateOf = (options: string) =>
      compileAssets(assets({ 'agents/a.md': withPhases(`  gate:\n${options}`) })).manifests[0]!.phases.find(
        (p) => p.kind === 'gate',
      )!.gate;
    expect(gateOf('    decide_role: owner\n    approvals: 2')).toEqual({
      decide_role: 'owner',
      approvals: 2,
      expiry: null,
    });
    expect(gateOf('    expires_after: 48h')).toMatchObject({
      expiry: { after_s: 172800, action: 'reject', target: null },
    });
    expect(gateOf('    expires_after: 90\n    on_expiry: approve')).toMatchObject({
      expiry: { after_s: 90, action: 'approve', target: null },
    });
    expect(gateOf('    expires_after: 2d\n    on_expiry: intake')).toMatchObject({
      expiry: { after_s: 172800, action: 'route', target: 'intake' },
    });
    expect(gateOf('    expires_after: 30m')!.expiry!.after_s).toBe(1800);
  });

  it('gives routes without a priority their position, and accepts routes that loop back when an exit remains', () => {
    const { manifests } = compileAssets(
      assets({
        'agents/demo.md': withPhases(
          '  output:\n    routes:\n      - { condition: contains, match: "more detail", target: analysis }\n      - { condition: regex, match: "^retry", target: intake }',
        ),
      }),
    );
    expect(manifests[0]!.phases.find((p) => p.id === 'output')!.routes).toEqual([
      { condition: 'contains', match: 'more detail', target: 'analysis', priority: 0 },
      { condition: 'regex', match: '^retry', target: 'intake', priority: 1 },
    ]);
  });

  it('uses the default layout of its kind for a built-in category', () => {
    const { manifests } = compileAssets(
      assets({
        'agents/a.md': asset('name: a\ndescription: x'),
        'commands/c.md': asset('name: c\ndescription: x\ncategory: ops'),
      }),
    );
    expect(manifests.map((m) => [m.name, m.category, m.graph])).toEqual([
      ['a', 'general', 'default-agent'],
      ['c', 'ops', 'default-command'],
    ]);
  });

  it('picks up a new asset file at the next build, and the server lists it after loading again', () => {
    const dir = assets({ 'agents/demo.md': asset(ok) });
    const out = path.join(tempDir('svc-gen-'), 'generated');
    writeGenerated(out, compileAssets(dir));
    expect(
      loadCatalog(out)
        .list('agent')
        .map((m) => m.name),
    ).toEqual(['demo']);
    fs.writeFileSync(path.join(dir, 'agents', 'second.md'), asset('name: second\ndescription: Another.'));
    writeGenerated(out, compileAssets(dir));
    expect(
      loadCatalog(out)
        .list('agent')
        .map((m) => m.name),
    ).toEqual(['demo', 'second']);
  });

  it('ships built-in layouts that pass its own checks, already in graph order', () => {
    for (const builtIn of Object.values(DEFAULT_LAYOUTS))
      expect(checkLayout({ file: '(built-in)' }, builtIn)).toEqual(builtIn);
  });

  it('names fields as they are written in YAML', () => {
    expect(fieldName(['phases', 'analysis', 'routes', 0, 'target'])).toBe('phases.analysis.routes[0].target');
    expect(fieldName(['tools', 'policies', 'files.*', 'policy'])).toBe('tools.policies["files.*"].policy');
    expect(fieldName([])).toBe('');
  });
});

describe('tools', () => {
  const declaring = `${ok}
tools:
  servers:
    files:
      command: mcp-server-filesystem
      args: ["{project_path}"]
      env: [GITHUB_TOKEN]
    everything:
      command: ./bin/mcp-server-everything
    tracker:
      url: https://mcp.example.com/mcp
      headers: { Authorization: TRACKER_AUTHORIZATION }
    notes:
      url: http://127.0.0.1:8931/mcp
  policies:
    project.git_diff: allow
    files.*: allow
    files.write_file: deny
    project.read_file: ask
    project.write_file:
      policy: ask
      decide_role: owner
      approvals: 2
      expires_after: 2d
      on_expiry: reject
  questions_expire_after: 30m
phases:
  intake:
    tools: [tracker.search]
  analysis:
    tools: [project.git_diff, project.read_file, files.*]
    max_tool_calls: 8
  gate:
    required_approval_context: [analysis]
  output:
    publish:
      tool: project.write_file
      from: analysis
      content: content
      arguments: { path: "reviews/{thread_id}.md" }`;

  it("compiles an asset's servers, policies, phase tools and publish step into its manifest", () => {
    const [demo] = compileAssets(assets({ 'agents/demo.md': asset(declaring) })).manifests;
    expect(demo!.tools).toEqual({
      servers: [
        {
          name: 'files',
          transport: 'stdio',
          command: 'mcp-server-filesystem',
          args: ['{project_path}'],
          env: ['GITHUB_TOKEN'],
        },
        { name: 'everything', transport: 'stdio', command: './bin/mcp-server-everything', args: [], env: [] },
        {
          name: 'tracker',
          transport: 'http',
          url: 'https://mcp.example.com/mcp',
          headers: { Authorization: 'TRACKER_AUTHORIZATION' },
        },
        { name: 'notes', transport: 'http', url: 'http://127.0.0.1:8931/mcp', headers: {} },
      ],
      policies: [
        { tool: 'project.git_diff', policy: 'allow', ask: null },
        { tool: 'files.*', policy: 'allow', ask: null },
        { tool: 'files.write_file', policy: 'deny', ask: null },
        { tool: 'project.read_file', policy: 'ask', ask: DEFAULT_GATE_POLICY },
        {
          tool: 'project.write_file',
          policy: 'ask',
          ask: { decide_role: 'owner', approvals: 2, expiry: { after_s: 172800, action: 'reject', target: null } },
        },
      ],
      question_expiry_s: 1800,
    });
    const phase = (id: string) => demo!.phases.find((p) => p.id === id)!;
    expect(phase('intake').tools).toEqual({ tools: ['tracker.search'], max_tool_calls: DEFAULT_MAX_TOOL_CALLS });
    expect(phase('analysis').tools).toEqual({
      tools: ['project.git_diff', 'project.read_file', 'files.*'],
      max_tool_calls: 8,
    });
    expect(phase('output')).not.toHaveProperty('tools');
    expect(phase('output').publish).toEqual({
      tool: 'project.write_file',
      from: 'analysis',
      content: 'content',
      arguments: { path: 'reviews/{thread_id}.md' },
    });
    for (const id of ['gate', 'cancelled']) {
      expect(phase(id)).not.toHaveProperty('tools');
      expect(phase(id)).not.toHaveProperty('publish');
    }
  });

  it('declares no tools for an asset without them, as two of the shipped assets are', () => {
    const [demo] = compileAssets(assets({ 'agents/demo.md': asset(ok) })).manifests;
    expect(demo!.tools).toEqual(NO_TOOLS);
    const shipped = compileAssets(path.join(root, 'assets')).manifests;
    expect(
      shipped
        .filter((m) => m.tools === NO_TOOLS || m.tools.servers.length + m.tools.policies.length === 0)
        .map((m) => m.name)
        .sort(),
    ).toEqual(['explain-error', 'incident-triage']);
  });

  it('writes the tools into the generated manifest the server loads', () => {
    const out = path.join(tempDir('svc-gen-'), 'generated');
    writeGenerated(out, compileAssets(assets({ 'agents/demo.md': asset(declaring) })));
    const { manifest } = loadCatalog(out).get('demo')!;
    expect(manifest.tools.servers.map((s) => `${s.name}:${s.transport}`)).toEqual([
      'files:stdio',
      'everything:stdio',
      'tracker:http',
      'notes:http',
    ]);
    expect(manifest.phases.find((p) => p.id === 'output')!.publish!.tool).toBe('project.write_file');
  });
});

describe('writing generated/', () => {
  const outputOf = (out: string) => fs.readdirSync(path.join(out, 'manifests', 'agents'));

  it('fails from the command line with exit 1 and the file, line and field, leaving the old output whole', () => {
    const out = path.join(tempDir('svc-gen-'), 'generated');
    writeGenerated(out, compileAssets(assets({ 'agents/demo.md': asset(ok) })));
    const bad = assets({
      'agents/good.md': asset('name: good\ndescription: x'),
      'agents/bad.md': asset('name: bad\ndescription: x\ncategory: nonsense'),
    });
    let failure: { status: number; stderr: string } | undefined;
    try {
      execFileSync(process.execPath, cli(bad, out), { cwd: root, stdio: 'pipe', encoding: 'utf8' });
    } catch (e) {
      failure = e as { status: number; stderr: string };
    }
    expect(failure?.status).toBe(1);
    expect(failure?.stderr).toMatch(/^build-assets: \S*agents\/bad\.md:4: category: unknown category "nonsense"/);
    expect(outputOf(out)).toEqual(['demo.json']);
  });

  it('keeps the old output and leaves no temporary folder when writing fails half way', () => {
    const parent = tempDir('svc-gen-');
    const out = path.join(parent, 'generated');
    const compiled = compileAssets(assets({ 'agents/demo.md': asset(ok) }));
    writeGenerated(out, compiled);
    const broken = {
      ...compiled,
      manifests: [...compiled.manifests, { ...compiled.manifests[0]!, name: 'no/such/folder' }],
    };
    expect(() => writeGenerated(out, broken)).toThrow(/ENOENT/);
    expect(outputOf(out)).toEqual(['demo.json']);
    expect(fs.readdirSync(parent)).toEqual(['generated']);
  });

  it('replaces the whole folder, so a removed asset disappears', () => {
    const out = path.join(tempDir('svc-gen-'), 'generated');
    writeGenerated(
      out,
      compileAssets(assets({ 'agents/demo.md': asset(ok), 'agents/other.md': asset('name: other\ndescription: x') })),
    );
    writeGenerated(out, compileAssets(assets({ 'agents/demo.md': asset(ok) })));
    expect(outputOf(out)).toEqual(['demo.json']);
  });

  it('survives builds running at the same time', async () => {
    const parent = tempDir('svc-gen-');
    const out = path.join(parent, 'generated');
    const run = () => promisify(execFile)(process.execPath, cli(path.join(root, 'assets'), out), { cwd: root });
    await Promise.all([run(), run(), run()]);
    expect(fs.readdirSync(parent)).toEqual(['generated']);
    expect(loadCatalog(out).counts()).toEqual({ agents: 3, commands: 2 });
  });
});

describe('bad assets are refused with the file, line and field', () => {
  const cases: [string, Record<string, string>, string][] = [
    [
      'no frontmatter',
      { 'agents/a.md': 'just text' },
      'agents/a.md:1: (frontmatter): the file must start with a --- YAML frontmatter block ---',
    ],
    [
      'invalid YAML',
      { 'agents/a.md': asset('name: [unclosed') },
      'agents/a.md:2: (frontmatter): invalid YAML: Flow sequence in block collection must be sufficiently indented and end with a ]',
    ],
    [
      'YAML that is not a mapping',
      { 'agents/a.md': asset('- a\n- b') },
      'agents/a.md:2: (frontmatter): must be a YAML mapping',
    ],
    ['a missing name', { 'agents/a.md': asset('description: x') }, 'agents/a.md:2: name: is required'],
    ['a missing description', { 'agents/a.md': asset('name: a') }, 'agents/a.md:2: description: is required'],
    [
      'a wrong type',
      { 'agents/a.md': withPhases('  analysis:\n    classification_options: yes') },
      'agents/a.md:7: phases.analysis.classification_options: Invalid input: expected array',
    ],
    [
      'a wrong type in a list',
      { 'agents/a.md': withPhases('  gate:\n    required_approval_context: [analysis, 3]') },
      'agents/a.md:7: phases.gate.required_approval_context[1]: Invalid input: expected string',
    ],
    ['an unknown field', { 'agents/a.md': asset(`${ok}\ncolour: red`) }, 'agents/a.md:5: colour: unknown field'],
    [
      'an unknown phase field',
      { 'agents/a.md': withPhases('  analysis:\n    prompt: x') },
      'agents/a.md:7: phases.analysis.prompt: unknown field',
    ],
    [
      'a bad name',
      { 'agents/a.md': asset('name: Bad Name\ndescription: x') },
      'agents/a.md:2: name: must be lowercase letters, digits and dashes',
    ],
    ['empty instructions', { 'agents/a.md': asset(ok, '') }, 'agents/a.md:5: (body): the instructions'],
    [
      'an unknown category',
      { 'agents/a.md': asset('name: a\ndescription: x\ncategory: nonsense') },
      'agents/a.md:4: category: unknown category "nonsense": use one of general, review',
    ],
    [
      'a custom layout for a command',
      { 'graphs/flow.json': layout(triageLike), 'commands/c.md': asset('name: c\ndescription: x\ncategory: flow') },
      'commands/c.md:4: category: custom graph layouts are for agents',
    ],
    [
      'a phase outside the graph',
      { 'agents/a.md': withPhases('  review:\n    description: x') },
      'agents/a.md:6: phases.review: node "review" is not in graph "default-agent"',
    ],
    [
      'a route to a missing node',
      { 'agents/a.md': withPhases('  analysis:\n    routes:\n      - { condition: always, target: nowhere }') },
      'agents/a.md:8: phases.analysis.routes[0].target: node "nowhere" is not in graph "default-agent"',
    ],
    [
      'a route with an unknown condition',
      { 'agents/a.md': withPhases('  analysis:\n    routes:\n      - { condition: maybe, target: output }') },
      'agents/a.md:8: phases.analysis.routes[0].condition: unknown condition "maybe": use one of contains, starts_with, ends_with, regex, always',
    ],
    [
      "a route with a gate's condition",
      { 'agents/a.md': withPhases('  analysis:\n    routes:\n      - { condition: approved, target: output }') },
      'agents/a.md:8: phases.analysis.routes[0].condition: "approved" is a gate decision, not a routing rule',
    ],
    [
      'a route from a gate',
      { 'agents/a.md': withPhases('  gate:\n    routes:\n      - { condition: always, target: output }') },
      'agents/a.md:7: phases.gate.routes: "gate" is a gate node: its edges are defined by graph "default-agent"',
    ],
    [
      'a route without a match value',
      { 'agents/a.md': withPhases('  intake:\n    routes:\n      - { condition: contains, target: output }') },
      'agents/a.md:8: phases.intake.routes[0].match: a contains rule needs a match value',
    ],
    [
      'a route with a bad regular expression',
      { 'agents/a.md': withPhases('  intake:\n    routes:\n      - { condition: regex, match: "(", target: output }') },
      'agents/a.md:8: phases.intake.routes[0].match: invalid regular expression',
    ],
    [
      'two routes with one priority',
      {
        'agents/a.md': withPhases(
          '  intake:\n    routes:\n      - { condition: contains, match: x, target: output, priority: 1 }\n      - { condition: always, target: gate }',
        ),
      },
      'agents/a.md:9: phases.intake.routes[1].priority: priority 1 is already used by phases.intake.routes[0]',
    ],
    [
      'routes that loop without an exit',
      {
        'agents/a.md': withPhases(
          '  analysis:\n    routes:\n      - { condition: contains, match: x, target: analysis }\n      - { condition: always, target: intake }',
        ),
      },
      'agents/a.md:7: phases.analysis.routes: graph cycle without an exit through "intake", "analysis"',
    ],
    [
      'an approval question outside a gate',
      { 'agents/a.md': withPhases('  output:\n    approval_question: Sure?') },
      'agents/a.md:7: phases.output.approval_question: "output" is not a gate',
    ],
    [
      'gate options outside a gate',
      { 'agents/a.md': withPhases('  output:\n    approvals: 2') },
      'agents/a.md:7: phases.output.approvals: "output" is not a gate',
    ],
    [
      'an expiry action without a time',
      { 'agents/a.md': withPhases('  gate:\n    on_expiry: approve') },
      'agents/a.md:7: phases.gate.on_expiry: needs expires_after: a gate without it never expires',
    ],
    [
      'an expiry that routes to a node that is not a phase',
      { 'agents/a.md': withPhases('  gate:\n    expires_after: 1h\n    on_expiry: cancelled') },
      'agents/a.md:8: phases.gate.on_expiry: "cancelled" is not reject, approve or an llm node of graph "default-agent"',
    ],
    [
      'a duration without a unit it knows',
      { 'agents/a.md': withPhases('  gate:\n    expires_after: 3 weeks') },
      'agents/a.md:7: phases.gate.expires_after',
    ],
    [
      'a role that does not exist',
      { 'agents/a.md': withPhases('  gate:\n    decide_role: boss') },
      'agents/a.md:7: phases.gate.decide_role',
    ],
    [
      'approval context outside a gate',
      { 'agents/a.md': withPhases('  output:\n    required_approval_context: [analysis]') },
      'agents/a.md:7: phases.output.required_approval_context: "output" is not a gate',
    ],
    [
      'approval context naming a missing node',
      { 'agents/a.md': withPhases('  gate:\n    required_approval_context: [diff]') },
      'agents/a.md:7: phases.gate.required_approval_context[0]: "diff" is not an llm node of graph "default-agent"',
    ],
    [
      'classification options on a gate',
      { 'agents/a.md': withPhases('  gate:\n    classification_options: [yes, no]') },
      'agents/a.md:7: phases.gate.classification_options: "gate" is a gate node',
    ],
    [
      'a duplicate name',
      { 'agents/a.md': asset(ok), 'commands/b.md': asset('name: demo\ndescription: x') },
      'commands/b.md:2: name: "demo" is already used by assets/agents/a.md',
    ],
    ['a layout that is not JSON', { 'graphs/flow.json': '{ nope' }, 'graphs/flow.json: (json):'],
    [
      'a layout with a wrong kind',
      { 'graphs/flow.json': layout({ ...triageLike, nodes: [{ id: 'a', kind: 'robot' }] }) },
      'graphs/flow.json:7: nodes[0].kind: Invalid option',
    ],
    [
      'a layout named after another file',
      { 'graphs/flow.json': layout({ ...triageLike, name: 'other' }) },
      'graphs/flow.json:2: name: must be "flow", the file\'s name',
    ],
    [
      'a layout replacing a built-in one',
      { 'graphs/default-agent.json': layout({ ...triageLike, name: 'default-agent' }) },
      'graphs/default-agent.json:2: name: "default-agent" is a built-in layout',
    ],
    [
      'a layout with a reserved node id',
      {
        'graphs/flow.json': layout({
          ...triageLike,
          nodes: [...triageLike.nodes, { id: '__end__', kind: 'terminal' }],
        }),
      },
      'graphs/flow.json:22: nodes[4].id: "__end__" must be lowercase',
    ],
    [
      'a layout with a duplicate node',
      { 'graphs/flow.json': layout({ ...triageLike, nodes: [...triageLike.nodes, { id: 'a', kind: 'llm' }] }) },
      'graphs/flow.json:22: nodes[4].id: node "a" is defined twice',
    ],
    [
      'a layout with a missing entry',
      { 'graphs/flow.json': layout({ ...triageLike, entry: 'start' }) },
      'graphs/flow.json:3: entry: node "start" is not in graph "flow"',
    ],
    [
      'a layout with an edge to a missing node',
      { 'graphs/flow.json': layout({ ...triageLike, edges: [...triageLike.edges, { from: 'b', to: '__end__' }] }) },
      'graphs/flow.json:39: edges[3].to: node "__end__" is not in graph "flow"',
    ],
    [
      'a layout with a condition on an llm edge',
      {
        'graphs/flow.json': layout({
          ...triageLike,
          edges: [{ from: 'a', to: 'g', condition: 'approved' }, ...triageLike.edges.slice(1)],
        }),
      },
      'graphs/flow.json:26: edges[0].condition: only a gate\'s edges carry a condition; "a" is an llm node',
    ],
    [
      'a layout with an unknown edge condition',
      {
        'graphs/flow.json': layout({
          ...triageLike,
          edges: [...triageLike.edges.slice(0, 2), { from: 'g', to: 'stop', condition: 'maybe' }],
        }),
      },
      'graphs/flow.json:35: edges[2].condition: unknown condition "maybe"',
    ],
    [
      'a gate without a rejected edge',
      { 'graphs/flow.json': layout({ ...triageLike, edges: triageLike.edges.slice(0, 2) }) },
      'graphs/flow.json:22: edges: gate "g" needs exactly one rejected edge, it has 0',
    ],
    [
      'a gate rejecting into an llm node',
      {
        'graphs/flow.json': layout({
          ...triageLike,
          edges: [...triageLike.edges.slice(0, 2), { from: 'g', to: 'a', condition: 'rejected' }],
        }),
      },
      'graphs/flow.json:22: edges: gate "g": the rejected edge must lead to a terminal node, "a" is an llm node',
    ],
    [
      'an llm node with two edges',
      { 'graphs/flow.json': layout({ ...triageLike, edges: [...triageLike.edges, { from: 'a', to: 'b' }] }) },
      'graphs/flow.json:22: edges: node "a" has 2 outgoing edges',
    ],
    [
      'a terminal node with an edge',
      { 'graphs/flow.json': layout({ ...triageLike, edges: [...triageLike.edges, { from: 'stop', to: 'b' }] }) },
      'graphs/flow.json:38: edges[3].from: terminal node "stop" cannot have outgoing edges',
    ],
    [
      'an unreachable node',
      { 'graphs/flow.json': layout({ ...triageLike, nodes: [...triageLike.nodes, { id: 'orphan', kind: 'llm' }] }) },
      'graphs/flow.json:4: nodes: "orphan" cannot be reached from the entry "a"',
    ],
    [
      'a layout cycle without an exit',
      {
        'graphs/loop.json': layout({
          name: 'loop',
          entry: 'a',
          nodes: [
            { id: 'a', kind: 'llm' },
            { id: 'b', kind: 'llm' },
          ],
          edges: [
            { from: 'a', to: 'b' },
            { from: 'b', to: 'a' },
          ],
        }),
      },
      'graphs/loop.json:14: edges: graph cycle without an exit through "a", "b"',
    ],
  ];

  it.each(cases)('%s', (_what, files, message) => {
    expect(error(files)).toContain(message);
  });

  it('points at the line the field is written on, below comments, blank lines and folded text, with any line ending', () => {
    const front = [
      '# A demo agent',
      'name: demo',
      '',
      'description: >-',
      '  A demo',
      '  agent.',
      'category: review',
      'phases:',
      '  gate:',
      '    required_approval_context:',
      '      - analysis',
      '      - 3',
    ];
    for (const newline of ['\n', '\r\n']) {
      const text = ['---', ...front, '---', 'Do the work well.', ''].join(newline);
      expect(error({ 'agents/a.md': text })).toMatch(
        /agents\/a\.md:13: phases\.gate\.required_approval_context\[1\]: Invalid input: expected string/,
      );
    }
  });

  it('a missing assets folder', () => {
    expect(() => compileAssets(path.join(tempDir('svc-assets-'), 'nope'))).toThrow(
      /nope: \(folder\): no such assets folder/,
    );
  });
});

describe('bad tools are refused with the file, line and field', () => {
  // Lines 2-4 are `ok`, `tools:` is line 5, the tools given start on line 6.
  const withTools = (tools: string, phases?: string) =>
    asset(`${ok}\ntools:\n${tools}${phases === undefined ? '' : `\nphases:\n${phases}`}`);
  // With one server: `phases:` is line 9, the phases given start on line 10.
  const withFiles = (phases: string) =>
    withTools('  servers:\n    files:\n      command: mcp-server-filesystem', phases);
  const stdio = (fields: string) =>
    withTools(`  servers:\n    files:\n      command: mcp-server-filesystem\n${fields}`);
  const http = (fields: string) => withTools(`  servers:\n    tracker:\n${fields}`);
  const policy = (line: string) => withTools(`  servers:\n    files:\n      command: x\n  policies:\n    ${line}`);
  const publishing = (publish: string, gate = '  gate:\n    required_approval_context: [analysis]') =>
    withFiles(`${gate}\n  output:\n    publish:\n${publish}`);

  const cases: [string, string, string][] = [
    [
      'questions that wait longer than a day (their call is held open meanwhile)',
      withTools('  questions_expire_after: 2d'),
      'agents/a.md:6: tools.questions_expire_after: is longer than a day: a question holds its call open meanwhile',
    ],
    [
      'a question expiry that is not a duration',
      withTools('  questions_expire_after: soon'),
      'agents/a.md:6: tools.questions_expire_after: must be a duration such as 90s, 30m, 48h or 2d',
    ],
    [
      'a server named project',
      withTools('  servers:\n    project:\n      command: x'),
      'agents/a.md:7: tools.servers.project: "project" is the name of the built-in project tools: give the server another',
    ],
    [
      'a server name a tool name cannot carry',
      withTools('  servers:\n    fi.les:\n      command: x'),
      'agents/a.md:7: tools.servers["fi.les"]: "fi.les" must be 1 to 64 letters, digits, _ and -, as tools are named <server>.<tool>',
    ],
    [
      'a server with both a command and a url',
      withTools('  servers:\n    files: { command: x, url: "https://mcp.example.com/mcp" }'),
      'agents/a.md:7: tools.servers.files: has both command and url',
    ],
    [
      'a server with neither a command nor a url',
      withTools('  servers:\n    files: { args: [a] }'),
      'agents/a.md:7: tools.servers.files: needs command (a program over stdio) or url (a streamable HTTP endpoint)',
    ],
    ['an unknown server field', stdio('      cwd: /tmp'), 'agents/a.md:9: tools.servers.files.cwd: unknown field'],
    ['an unknown tools field', withTools('  allow: [files.*]'), 'agents/a.md:6: tools.allow: unknown field'],
    [
      'headers for a stdio server',
      stdio('      headers: { Authorization: TOKEN }'),
      'agents/a.md:9: tools.servers.files.headers: are for a server with a url: a stdio server gets env',
    ],
    [
      'env for an HTTP server',
      http('      url: https://mcp.example.com/mcp\n      env: [TOKEN]'),
      'agents/a.md:9: tools.servers.tracker.env: is for a server with a command: a server with a url gets headers',
    ],
    [
      'an env entry that is not a variable name',
      stdio('      env:\n        - GITHUB_TOKEN\n        - ghp_0123456789abcdef'),
      'agents/a.md:11: tools.servers.files.env[1]: is not the name of an environment variable',
    ],
    [
      "one of the service's secrets in env",
      stdio('      env: [GITHUB_TOKEN, SESSION_SECRET]'),
      `agents/a.md:9: tools.servers.files.env[1]: "SESSION_SECRET" is a variable the service reads itself (its settings, its secrets among them): a tool's server never gets it`,
    ],
    [
      'a header given its value instead of a variable',
      http('      url: https://mcp.example.com/mcp\n      headers:\n        Authorization: Bearer abc123'),
      'agents/a.md:10: tools.servers.tracker.headers.Authorization: is not the name of an environment variable',
    ],
    [
      "one of the service's secrets in a header",
      http('      url: https://mcp.example.com/mcp\n      headers: { X-Db: DATABASE_URL }'),
      `agents/a.md:9: tools.servers.tracker.headers.X-Db: "DATABASE_URL" is a variable the service reads itself (its settings, its secrets among them): a tool's server never gets it`,
    ],
    [
      'a header name HTTP does not allow',
      http('      url: https://mcp.example.com/mcp\n      headers: { "Bad Header": TOKEN }'),
      'agents/a.md:9: tools.servers.tracker.headers["Bad Header"]: "Bad Header" is not an HTTP header name',
    ],
    [
      'a url that is not http or https',
      http('      url: ftp://mcp.example.com/mcp'),
      'agents/a.md:8: tools.servers.tracker.url: must be an http or https URL, not ftp',
    ],
    [
      'a url that is not a URL',
      http('      url: mcp.example.com/mcp'),
      'agents/a.md:8: tools.servers.tracker.url: is not a URL',
    ],
    [
      'a url with credentials',
      http('      url: https://bot:pa55word@mcp.example.com/mcp'),
      'agents/a.md:8: tools.servers.tracker.url: carries credentials: give them in headers',
    ],
    [
      'a policy for a server that is not declared',
      policy('jira.*: allow'),
      'agents/a.md:10: tools.policies["jira.*"]: server "jira" is not declared in tools.servers (nor is it "project", the built-in project tools)',
    ],
    [
      'a policy for a project tool that does not exist',
      policy('project.delete_file: allow'),
      'agents/a.md:10: tools.policies["project.delete_file"]: "delete_file" is not a project tool: they are list_files, read_file, search_files, git_diff, git_log, git_show, write_file',
    ],
    [
      'a policy without a tool',
      policy('files: allow'),
      'agents/a.md:10: tools.policies.files: "files" is not <server>.<tool> or <server>.*',
    ],
    [
      'a policy with a dotted tool',
      policy('files.read.all: allow'),
      'agents/a.md:10: tools.policies["files.read.all"]: "files.read.all" is not <server>.<tool> or <server>.*',
    ],
    [
      'a policy for every server',
      policy('"*.read_file": allow'),
      'agents/a.md:10: tools.policies["*.read_file"]: "*.read_file" is not <server>.<tool> or <server>.*',
    ],
    [
      'a policy kind that does not exist',
      policy('files.*: maybe'),
      'agents/a.md:10: tools.policies["files.*"].policy: Invalid option: expected one of "allow"|"ask"|"deny"',
    ],
    [
      "a gate's options on a policy that does not ask",
      policy('files.*:\n      policy: allow\n      approvals: 2'),
      `agents/a.md:12: tools.policies["files.*"].approvals: only a policy that asks takes a gate's options; this one is allow`,
    ],
    [
      'an ask that would go on at a phase when it expires',
      policy('project.write_file: { policy: ask, expires_after: 1h, on_expiry: intake }'),
      'agents/a.md:10: tools.policies["project.write_file"].on_expiry: "intake" is not reject or approve: a tool has no phase to go on at',
    ],
    [
      "an ask with a gate option's bad value",
      policy('project.write_file: { policy: ask, decide_role: maintainer }'),
      'agents/a.md:10: tools.policies["project.write_file"].decide_role: Invalid option',
    ],
    [
      'tools on a gate',
      withFiles('  gate:\n    tools: [project.read_file]'),
      'agents/a.md:11: phases.gate.tools: "gate" is a gate node: only llm nodes call tools',
    ],
    [
      'a tool call limit on a gate',
      withFiles('  gate:\n    max_tool_calls: 3'),
      'agents/a.md:11: phases.gate.max_tool_calls: "gate" is a gate node: only llm nodes call tools',
    ],
    [
      'publish on a terminal node',
      withFiles('  cancelled:\n    publish: { tool: project.write_file, from: analysis, content: content }'),
      'agents/a.md:11: phases.cancelled.publish: "cancelled" is a terminal node: only llm nodes call tools',
    ],
    [
      "a phase's tool of a server that is not declared",
      withFiles('  analysis:\n    tools:\n      - project.read_file\n      - jira.search'),
      'agents/a.md:13: phases.analysis.tools[1]: server "jira" is not declared in tools.servers',
    ],
    [
      "a phase's project tool that does not exist",
      withFiles('  analysis:\n    tools: [project.rm]'),
      'agents/a.md:11: phases.analysis.tools[0]: "rm" is not a project tool',
    ],
    [
      'a tool call limit without tools',
      withFiles('  analysis:\n    max_tool_calls: 5'),
      'agents/a.md:11: phases.analysis.max_tool_calls: needs tools: a phase without tools calls none',
    ],
    [
      'a tool call limit above 100',
      withFiles('  analysis:\n    tools: [files.*]\n    max_tool_calls: 101'),
      'agents/a.md:12: phases.analysis.max_tool_calls: Too big: expected number to be <=100',
    ],
    [
      'an empty list of tools',
      withFiles('  analysis:\n    tools: []'),
      'agents/a.md:11: phases.analysis.tools: Too small',
    ],
    [
      'publish and tools on one phase',
      withFiles(
        '  gate:\n    required_approval_context: [analysis]\n  output:\n    tools: [files.*]\n    publish: { tool: project.write_file, from: analysis, content: content }',
      ),
      'agents/a.md:14: phases.output.publish: a phase that publishes makes that one call and no other: it takes no tools',
    ],
    [
      "publish on a phase that does not follow a gate's approval",
      withFiles('  analysis:\n    publish: { tool: project.write_file, from: intake, content: content }'),
      `agents/a.md:11: phases.analysis.publish: "analysis" does not follow a gate's approval in graph "default-agent": publish writes only text a gate approved`,
    ],
    [
      'publish of a phase the gate does not show',
      publishing('      tool: project.write_file\n      from: intake\n      content: content'),
      `agents/a.md:15: phases.output.publish.from: "intake" is not in gate "gate"'s required_approval_context: publish writes only text that gate showed and approved`,
    ],
    [
      'publish after a gate that names no approval context',
      publishing(
        '      tool: project.write_file\n      from: analysis\n      content: content',
        '  gate:\n    approvals: 1',
      ),
      `agents/a.md:15: phases.output.publish.from: "analysis" is not in gate "gate"'s required_approval_context`,
    ],
    [
      'publish with every tool of a server',
      publishing('      tool: files.*\n      from: analysis\n      content: content'),
      'agents/a.md:14: phases.output.publish.tool: "files.*" names every tool of "files": publish makes one call, name its tool',
    ],
    [
      'publish with a tool of a server that is not declared',
      publishing('      tool: jira.create_comment\n      from: analysis\n      content: content'),
      'agents/a.md:14: phases.output.publish.tool: server "jira" is not declared in tools.servers',
    ],
    [
      'publish with a tool name without a server',
      publishing('      tool: write_file\n      from: analysis\n      content: content'),
      'agents/a.md:14: phases.output.publish.tool: "write_file" is not <server>.<tool>',
    ],
    [
      'publish giving the content argument twice',
      publishing(
        '      tool: project.write_file\n      from: analysis\n      content: content\n      arguments:\n        path: out.md\n        content: draft',
      ),
      'agents/a.md:19: phases.output.publish.arguments.content: "content" receives the approved text (content): it is not one of the other arguments',
    ],
    [
      'publish without the argument that receives the text',
      publishing('      tool: project.write_file\n      from: analysis'),
      'agents/a.md:13: phases.output.publish.content: is required',
    ],
    [
      'an unknown publish field',
      publishing('      tool: project.write_file\n      from: analysis\n      content: content\n      mode: append'),
      'agents/a.md:17: phases.output.publish.mode: unknown field',
    ],
  ];

  it.each(cases)('%s', (_what, text, message) => {
    expect(error({ 'agents/a.md': text })).toContain(message);
  });

  it("refuses every variable the service reads, in env or a header: its configuration's and OpenTelemetry's", () => {
    const refused = (text: string) =>
      expect(error({ 'agents/a.md': text })).toMatch(/a variable the service reads itself/);
    // LOCAL_LLM_BASE may carry the runtime's password; the exporter's headers, a collector's key.
    for (const name of [...CONFIG_VARIABLES, 'OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_TRACES_HEADERS']) {
      refused(stdio(`      env: [GITHUB_TOKEN, ${name}]`));
      refused(http(`      url: https://mcp.example.com/mcp\n      headers: { Authorization: ${name} }`));
    }
    expect(CONFIG_VARIABLES).toEqual(expect.arrayContaining(['LOCAL_LLM_BASE', 'DATABASE_URL', 'SVC_API_TOKEN']));
    expect(() =>
      compileAssets(assets({ 'agents/a.md': stdio('      env: [GITHUB_TOKEN, OLLAMA_PROXY_TOKEN]') })),
    ).not.toThrow();
  });

  it('never repeats what stands in the place of a secret', () => {
    const leaked = [
      error({ 'agents/a.md': stdio('      env: [ghp_0123456789abcdef]') }),
      error({ 'agents/a.md': http('      url: https://bot:pa55word@mcp.example.com/mcp') }),
    ];
    for (const message of leaked) expect(message).not.toMatch(/ghp_0123456789abcdef|pa55word/);
  });
});
