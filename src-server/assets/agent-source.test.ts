import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { McpServer } from '../contracts/tools';
import { compileAgentSource, STORED_SOURCE, type AgentSourceOptions, type SourceProblem } from './agent-source';
import { compileAssets } from './asset-compiler';
import { AssetError } from './asset-error';

const root = path.resolve(import.meta.dirname, '..', '..');
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

const shipped = compileAssets(path.join(root, 'assets'));
// As generated/ holds them: the built-in layouts beside the custom ones.
const shippedLayouts = new Map(shipped.layouts.map((l) => [l.name, l]));

/** An assets folder with the given files, e.g. { 'agents/x.md': '...' }. */
function assets(files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-assets-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

const REGISTRY = new Map<string, McpServer>([
  [
    'filesystem',
    {
      name: 'filesystem',
      transport: 'stdio',
      command: 'mcp-server-filesystem',
      args: ['{project_path}'],
      env: ['FS_TOKEN'],
    },
  ],
  [
    'tracker',
    {
      name: 'tracker',
      transport: 'http',
      url: 'https://mcp.example.com/mcp',
      headers: { Authorization: 'TRACKER_AUTHORIZATION' },
    },
  ],
]);
const STORED: AgentSourceOptions = { layouts: shippedLayouts, registry: REGISTRY, stored: true };

// `ok` is lines 2-3; what follows it starts on line 4.
const ok = 'name: demo\ndescription: A demo agent.';
const source = (front: string, body = 'Do the work well.') => `---\n${front}\n---\n${body}\n`;
const problemsOf = (text: string, options = STORED) => compileAgentSource(text, options).problems;

function manifestOf(text: string, options = STORED) {
  const result = compileAgentSource(text, options);
  expect(result.problems).toEqual([]);
  return result.manifest!;
}

const problem = (line: number | null, field: string, message: string | RegExp): SourceProblem =>
  ({ line, field, message: typeof message === 'string' ? message : expect.stringMatching(message) }) as SourceProblem;

describe('every problem of a source', () => {
  it('is reported with its line and field, in line order', () => {
    const text = source(
      [
        ok,
        'colour: red', // 4
        'tools:',
        '  policies:',
        '    nodot: allow', // 7
        'phases:',
        '  review:', // 9
        '    description: Not a node of the agent layout.',
      ].join('\n'),
    );
    expect(compileAgentSource(text, STORED)).toEqual({
      manifest: undefined,
      problems: [
        { line: 4, field: 'colour', message: 'unknown field' },
        { line: 7, field: 'tools.policies.nodot', message: '"nodot" is not <server>.<tool> or <server>.*' },
        { line: 9, field: 'phases.review', message: 'node "review" is not in graph "default-agent"' },
      ],
    });
  });

  it('counts every zod issue, but stops at a wrong type before checking what depends on it', () => {
    const text = source(
      [
        ok,
        'phases:',
        '  analysis:',
        '    classification_options: yes', // 6
        '    routes:',
        '      - { condition: always, target: nowhere }',
        '  gate:',
        '    approvals: many', // 10
      ].join('\n'),
    );
    expect(problemsOf(text)).toEqual([
      problem(6, 'phases.analysis.classification_options', /^Invalid input: expected array/),
      problem(10, 'phases.gate.approvals', /^Invalid input: expected number/),
    ]);
  });

  it('checks each phase, each rule and each server and policy on its own', () => {
    const text = source(
      [
        ok,
        'tools:',
        '  servers:',
        '    project: { url: "https://mcp.example.com/mcp" }', // 6
        '    tracker: { url: "ftp://mcp.example.com" }', // 7
        '  policies:',
        '    tracker.*: allow', // 9
        '    jira.*: allow', // 10
        'phases:',
        '  intake:',
        '    routes:',
        '      - { condition: maybe, target: output }', // 14
        '      - { condition: always, target: nowhere }', // 15
        '  output:',
        '    approvals: 2', // 17
        '    tools: [tracker.search, project.rm]', // 18
      ].join('\n'),
    );
    expect(problemsOf(text)).toEqual([
      problem(6, 'tools.servers.project', /is the name of the built-in project tools/),
      problem(7, 'tools.servers.tracker.url', 'must be an http or https URL, not ftp'),
      problem(10, 'tools.policies["jira.*"]', /server "jira" is not declared in tools.servers/),
      problem(14, 'phases.intake.routes[0].condition', /^unknown condition "maybe"/),
      problem(15, 'phases.intake.routes[1].target', 'node "nowhere" is not in graph "default-agent"'),
      problem(17, 'phases.output.approvals', '"output" is not a gate'),
      problem(18, 'phases.output.tools[1]', /^"rm" is not a project tool/),
    ]);
  });

  it('checks for a cycle once every rule is sound, beside the problems of other fields', () => {
    const looping = [
      'phases:',
      '  analysis:',
      '    routes:', // 6
      '      - { condition: always, target: intake }',
    ];
    expect(problemsOf(source([ok, ...looping, 'colour: red'].join('\n')))).toEqual([
      problem(6, 'phases.analysis.routes', 'graph cycle without an exit through "intake", "analysis"'),
      problem(8, 'colour', 'unknown field'),
    ]);
    const unsound = [...looping, '      - { condition: contains, target: output }'];
    expect(problemsOf(source([ok, ...unsound].join('\n')))).toEqual([
      problem(8, 'phases.analysis.routes[1].match', 'a contains rule needs a match value'),
    ]);
  });

  it('stops where nothing after it can be checked: bad YAML, a frontmatter that is no mapping, an unknown category', () => {
    expect(problemsOf(source(`${ok}\ncolour: [red`))).toEqual([problem(4, '(frontmatter)', /^invalid YAML: /)]);
    expect(problemsOf(source('- a\n- b'))).toEqual([problem(2, '(frontmatter)', 'must be a YAML mapping')]);
    expect(problemsOf('just text')).toEqual([
      problem(1, '(frontmatter)', 'the file must start with a --- YAML frontmatter block ---'),
    ]);
    expect(problemsOf(source(`${ok}\ncolour: red\ncategory: nonsense\nphases:\n  review: {}`, ''))).toEqual([
      problem(4, 'colour', 'unknown field'),
      problem(5, 'category', /^unknown category "nonsense"/),
      problem(8, '(body)', 'the instructions (markdown after the frontmatter) are empty'),
    ]);
  });

  it('is what the build stops at first, with the same line, field and message', () => {
    const text = source(`${ok}\ncolour: red\nphases:\n  review: {}`);
    let stopped: AssetError | undefined;
    try {
      compileAssets(assets({ 'agents/demo.md': text }));
    } catch (error) {
      stopped = error as AssetError;
    }
    expect(stopped).toBeInstanceOf(AssetError);
    const [first] = problemsOf(text);
    expect({ line: stopped!.line, field: stopped!.field, message: stopped!.detail }).toEqual(first);
    expect(stopped!.message).toMatch(/agents\/demo\.md:4: colour: unknown field$/);
  });
});

describe('a source the build shipped', () => {
  it('compiles to the manifest the build gives, its kind following from its phases', () => {
    for (const built of shipped.manifests) {
      const text = fs.readFileSync(path.join(root, built.source), 'utf8');
      const options = { layouts: shippedLayouts, registry: new Map(), stored: false, label: built.source };
      expect(manifestOf(text, options)).toEqual(built);
    }
  });

  it('compiles, stored, to the same manifest but for its source', () => {
    const built = shipped.manifests.find((m) => m.name === 'change-review')!;
    const text = fs.readFileSync(path.join(root, 'assets', 'agents', 'change-review.md'), 'utf8');
    const stored = manifestOf(text);
    expect(stored.source).toBe(STORED_SOURCE);
    expect({ ...stored, source: built.source }).toEqual(built);
  });

  it('runs a program, which stored text may not', () => {
    const text = fs.readFileSync(path.join(root, 'assets', 'commands', 'repo-summary.md'), 'utf8');
    expect(problemsOf(text)).toEqual([
      problem(9, 'tools.servers.files.command', /^a stored agent cannot start a program on the server/),
    ]);
  });
});

describe('its kind', () => {
  const kindOf = (front: string) => manifestOf(source(`${ok}\n${front}`));

  it('is a command when its phases are the command layout nodes, else an agent', () => {
    expect(kindOf('phases:\n  dispatch: {}\n  summarize: {}')).toMatchObject({
      kind: 'command',
      graph: 'default-command',
    });
    expect(kindOf('category: review')).toMatchObject({ kind: 'agent', graph: 'default-agent' });
    expect(kindOf('phases:\n  analysis: {}')).toMatchObject({ kind: 'agent', graph: 'default-agent' });
    expect(problemsOf(source(`${ok}\nphases:\n  dispatch: {}\n  intake: {}`))).toEqual([
      problem(5, 'phases.dispatch', 'node "dispatch" is not in graph "default-agent"'),
    ]);
  });

  it('is its kind field where it has one', () => {
    expect(kindOf('kind: command')).toMatchObject({ kind: 'command', graph: 'default-command' });
    expect(problemsOf(source(`${ok}\nkind: agent\nphases:\n  dispatch: {}`))).toEqual([
      problem(6, 'phases.dispatch', 'node "dispatch" is not in graph "default-agent"'),
    ]);
    expect(problemsOf(source(`${ok}\nkind: robot`))).toEqual([problem(4, 'kind', /^Invalid option/)]);
  });

  it('runs a custom layout of the shipped graphs by its category', () => {
    const triage = kindOf('category: triage\nphases:\n  classify: {}');
    expect(triage).toMatchObject({ kind: 'agent', graph: 'triage' });
    expect(triage.phases.map((p) => p.id)).toEqual(shippedLayouts.get('triage')!.nodes.map((n) => n.id));
  });

  it('does not take a built-in layout for a custom one', () => {
    expect(problemsOf(source(`${ok}\ncategory: default-agent`))).toEqual([
      problem(4, 'category', /^unknown category "default-agent"/),
    ]);
  });
});

describe('caps on untrusted text', () => {
  it('takes at most 64 KiB of UTF-8', () => {
    const head = `---\n${ok}\n---\n`;
    const room = 65536 - Buffer.byteLength(head);
    // Two bytes a character: a cap on characters would let twice as much through.
    const full = head + 'é'.repeat(room / 2);
    expect(Buffer.byteLength(full)).toBe(65536);
    expect(manifestOf(full).instructions).toHaveLength(room / 2);
    expect(problemsOf(`${full}!`)).toEqual([problem(null, '(source)', 'is 65537 bytes: at most 65536 (64 KiB)')]);
  });

  it('nests at most 12 levels deep', () => {
    // The top mapping is level 1: `x` holds 11 more, then 12.
    const nested = (levels: number) => source(`${ok}\nx: ${'['.repeat(levels)}${']'.repeat(levels)}`);
    expect(problemsOf(nested(11))).toEqual([problem(4, 'x', 'unknown field')]);
    expect(problemsOf(nested(12))).toEqual([problem(4, '(frontmatter)', 'nests deeper than 12 levels')]);
    const block = Array.from({ length: 13 }, (_, i) => `${'  '.repeat(i)}k${i}:`).join('\n');
    expect(problemsOf(source(`${ok}\n${block} x`))).toEqual([
      problem(16, '(frontmatter)', 'nests deeper than 12 levels'),
    ]);
  });

  it('refuses text nested thousands deep before the YAML parser recurses into it', () => {
    for (const text of [
      source(`${ok}\nx: ${'['.repeat(30000)}${']'.repeat(30000)}`),
      source(`${ok}\nx: ${'{a: '.repeat(12000)}${'}'.repeat(12000)}`),
    ]) {
      expect(problemsOf(text)).toEqual([problem(4, '(frontmatter)', 'nests deeper than 12 levels')]);
    }
  });

  it('refuses YAML aliases in stored text, and an expansion bomb in any', () => {
    const aliased = source(
      `${ok}\nphases:\n  intake:\n    description: &same Read it.\n  analysis:\n    description: *same`,
    );
    expect(problemsOf(aliased)).toEqual([
      problem(8, '(frontmatter)', 'a stored agent uses no YAML aliases (*name): write the value out'),
    ]);
    const shippedOptions = { ...STORED, stored: false };
    expect(manifestOf(aliased, shippedOptions).phases[1]!.description).toBe('Read it.');

    const levels = 'abcdefghi';
    const laughs = [...levels].map((level, i) =>
      i === 0
        ? `  ${level}: &${level} [lol, lol, lol, lol, lol, lol, lol, lol, lol]`
        : `  ${level}: &${level} [${Array(9)
            .fill(`*${levels[i - 1]}`)
            .join(', ')}]`,
    );
    const bomb = source(`${ok}\nlaughs:\n${laughs.join('\n')}`);
    expect(problemsOf(bomb)).toEqual([problem(6, '(frontmatter)', /^a stored agent uses no YAML aliases/)]);
    expect(problemsOf(bomb, shippedOptions)).toEqual([
      problem(6, '(frontmatter)', 'its YAML aliases (*name) expand too far: at most 100 expansions'),
    ]);
  });

  const withTools = (servers: number, policies: number) =>
    source(
      [
        ok,
        'tools:',
        '  servers:',
        ...Array.from({ length: servers }, (_, i) => `    s${i}: { url: "https://mcp.example.com/${i}" }`),
        '  policies:',
        ...Array.from({ length: policies }, (_, i) => `    s0.tool${i}: allow`),
      ].join('\n'),
    );

  it('declares at most 16 servers', () => {
    expect(manifestOf(withTools(16, 1)).tools.servers).toHaveLength(16);
    expect(problemsOf(withTools(17, 1))).toEqual([problem(5, 'tools.servers', 'too many servers: at most 16')]);
  });

  it('has at most 64 tool policy patterns', () => {
    expect(manifestOf(withTools(1, 64)).tools.policies).toHaveLength(64);
    expect(problemsOf(withTools(1, 65))).toEqual([
      problem(7, 'tools.policies', 'too many tool policy patterns: at most 64'),
    ]);
  });

  it('gives a phase at most 32 routes and 64 tools', () => {
    const phase = (routes: number, tools: number) =>
      source(
        [
          ok,
          'phases:',
          '  intake:', // 5
          `    tools: [${Array.from({ length: tools }, (_, i) => `project.${i % 2 ? 'read_file' : 'list_files'}`).join(', ')}]`,
          '    routes:', // 7
          ...Array.from(
            { length: routes },
            (_, i) => `      - { condition: contains, match: "m${i}", target: output }`,
          ),
        ].join('\n'),
      );
    const intake = manifestOf(phase(32, 64)).phases[0]!;
    expect([intake.routes.length, intake.tools!.tools.length]).toEqual([32, 64]);
    expect(problemsOf(phase(33, 65))).toEqual([
      problem(6, 'phases.intake.tools', 'too many tools: at most 64 per phase'),
      problem(7, 'phases.intake.routes', 'too many routes: at most 32 per phase'),
    ]);
  });
});

describe('stored text', () => {
  const servers = (server: string) => source(`${ok}\ntools:\n  servers:\n    files:\n${server}`);

  it('starts no program on the server', () => {
    const stdio = servers('      command: mcp-server-filesystem');
    expect(problemsOf(stdio)).toEqual([
      problem(
        7,
        'tools.servers.files.command',
        "a stored agent cannot start a program on the server: name a server of the instance's registry (registry: <name>)",
      ),
    ]);
    expect(manifestOf(stdio, { ...STORED, stored: false }).tools.servers[0]).toMatchObject({ transport: 'stdio' });
  });

  it('names no environment variable, for a server nor for a header', () => {
    const url = '      url: https://mcp.example.com/mcp';
    expect(problemsOf(servers(`${url}\n      env: [TOKEN]`))).toEqual([
      problem(8, 'tools.servers.files.env', /^a stored agent names no environment variable: /),
    ]);
    expect(problemsOf(servers(`${url}\n      headers: { Authorization: TRACKER_AUTHORIZATION }`))).toEqual([
      problem(8, 'tools.servers.files.headers', /^a stored agent names no environment variable, /),
    ]);
  });

  it('reaches an HTTP server under the checks every asset has', () => {
    expect(manifestOf(servers('      url: https://mcp.example.com/mcp')).tools.servers).toEqual([
      { name: 'files', transport: 'http', url: 'https://mcp.example.com/mcp', headers: {} },
    ]);
    expect(problemsOf(servers('      url: https://bot:pa55word@mcp.example.com/mcp'))).toEqual([
      problem(7, 'tools.servers.files.url', /^carries credentials/),
    ]);
  });
});

describe('a server of the instance registry', () => {
  const naming = (server: string, phases = '') =>
    source(`${ok}\ntools:\n  servers:\n    files:\n${server}${phases ? `\nphases:\n${phases}` : ''}`);

  it('compiles to the registered server under the agent own key, its environment included', () => {
    const manifest = manifestOf(naming('      registry: filesystem', '  analysis:\n    tools: [files.read_text_file]'));
    expect(manifest.tools.servers).toEqual([
      {
        name: 'files',
        transport: 'stdio',
        command: 'mcp-server-filesystem',
        args: ['{project_path}'],
        env: ['FS_TOKEN'],
      },
    ]);
    expect(manifest.phases.find((p) => p.id === 'analysis')!.tools!.tools).toEqual(['files.read_text_file']);
    expect(manifestOf(naming('      registry: tracker')).tools.servers).toEqual([
      { ...REGISTRY.get('tracker'), name: 'files' },
    ]);
  });

  it('goes alone', () => {
    for (const field of ['url: https://mcp.example.com/mcp', 'command: x', 'args: [a]', 'env: [A]', 'headers: {}']) {
      expect(problemsOf(naming(`      registry: filesystem\n      ${field}`))).toEqual([
        problem(
          8,
          `tools.servers.files.${field.split(':')[0]}`,
          'does not go with registry: a registered server is used as the instance registered it, registry goes alone',
        ),
      ]);
    }
  });

  it('must be registered', () => {
    expect(problemsOf(naming('      registry: jira'))).toEqual([
      problem(7, 'tools.servers.files.registry', 'no MCP server named "jira" is registered on this instance'),
    ]);
  });
});

describe('the build', () => {
  function buildError(files: Record<string, string>): string {
    try {
      compileAssets(assets(files));
    } catch (error) {
      return (error as Error).message;
    }
    return 'built';
  }

  it('takes the kind from the folder, and a kind field only where it says the same', () => {
    expect(buildError({ 'agents/a.md': source(`${ok}\nkind: agent`) })).toBe('built');
    expect(buildError({ 'agents/a.md': source(`${ok}\nkind: command`) })).toMatch(
      /agents\/a\.md:4: kind: "command" does not match its folder: a file in agents\/ is an agent$/,
    );
    expect(buildError({ 'commands/c.md': source(`${ok}\nkind: agent`) })).toMatch(
      /commands\/c\.md:4: kind: "agent" does not match its folder: a file in commands\/ is a command$/,
    );
  });

  it('knows no registry: a shipped file naming a registered server is refused', () => {
    expect(
      buildError({ 'agents/a.md': source(`${ok}\ntools:\n  servers:\n    files: { registry: filesystem }`) }),
    ).toMatch(
      /agents\/a\.md:6: tools\.servers\.files\.registry: no MCP server named "filesystem" is registered on this instance$/,
    );
  });
});
