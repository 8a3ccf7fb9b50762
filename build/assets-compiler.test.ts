import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadCatalog } from '../src-server/assets/catalog';
import { GraphLayoutSchema, ManifestSchema } from '../src-server/contracts/assets';
import { compileAssets, writeGenerated } from './assets-compiler';

const root = path.resolve(import.meta.dirname, '..');
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

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

const agent = (front: string, body = 'Do the work well.') => `---\n${front}\n---\n${body}\n`;
const ok = 'name: demo\ndescription: A demo agent.\ncategory: review';

function error(files: Record<string, string>): string {
  try {
    compileAssets(assets(files));
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error('expected the build to fail');
}

describe('the shipped assets', () => {
  it('build into manifests, layouts and a runtime contract the server loads', () => {
    const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-gen-')), 'generated');
    dirs.push(path.dirname(out));
    const compiled = compileAssets(path.join(root, 'assets'));
    writeGenerated(out, compiled);
    for (const m of compiled.manifests) expect(ManifestSchema.parse(m)).toEqual(m);
    for (const l of compiled.layouts) expect(GraphLayoutSchema.parse(l)).toEqual(l);

    const catalog = loadCatalog(out);
    expect(catalog.counts()).toEqual({ agents: 2, commands: 2 });
    expect(catalog.get('change-review')!.layout.nodes.map((n) => n.id)).toEqual(['intake', 'analysis', 'gate', 'output', 'cancelled']);
    expect(catalog.get('incident-triage')!.manifest.graph).toBe('triage');
    expect(catalog.get('repo-summary')!.layout.nodes.map((n) => n.id)).toEqual(['dispatch', 'execute', 'summarize']);
    const gate = catalog.get('change-review')!.manifest.phases.find((p) => p.id === 'gate')!;
    expect(gate).toMatchObject({ kind: 'gate', approval_question: 'Publish this review to the author?', required_approval_context: ['analysis'] });

    const contract = JSON.parse(fs.readFileSync(path.join(out, 'runtime-contract.json'), 'utf8'));
    expect(contract.assets['change-review'].gates).toEqual([{ node: 'gate', question: 'Publish this review to the author?', required_context: ['analysis'] }]);
    expect(contract.assets['change-review'].phases.find((p: { id: string }) => p.id === 'gate').outgoing).toEqual([
      { from: 'gate', to: 'output', condition: 'approved' },
      { from: 'gate', to: 'cancelled', condition: 'rejected' },
    ]);
  });

  it('picks up a new asset file at the next build', () => {
    const dir = assets({ 'agents/demo.md': agent(ok) });
    expect(compileAssets(dir).manifests.map((m) => m.name)).toEqual(['demo']);
    fs.writeFileSync(path.join(dir, 'agents', 'second.md'), agent('name: second\ndescription: Another.'));
    expect(compileAssets(dir).manifests.map((m) => m.name)).toEqual(['demo', 'second']);
  });

  it('fails from the command line with exit 1 and the file and field, leaving the old output whole', () => {
    const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-gen-')), 'generated');
    dirs.push(path.dirname(out));
    writeGenerated(out, compileAssets(assets({ 'agents/demo.md': agent(ok) })));
    const bad = assets({ 'agents/bad.md': agent('name: bad\ndescription: x\ncategory: nonsense') });
    let stderr = '';
    try {
      execFileSync(process.execPath, ['--import', 'tsx', 'build/build-assets.ts', bad, out], { cwd: root, stdio: 'pipe' });
    } catch (e) {
      stderr = String((e as { stderr: Buffer }).stderr);
      expect((e as { status: number }).status).toBe(1);
    }
    expect(stderr).toContain('agents/bad.md: category: unknown category "nonsense"');
    expect(fs.readdirSync(path.join(out, 'manifests', 'agents'))).toEqual(['demo.json']);
  });
});

describe('bad assets', () => {
  it.each([
    ['no frontmatter', { 'agents/a.md': 'just text' }, 'agents/a.md: (frontmatter): the file must start with a --- YAML frontmatter block ---'],
    ['invalid YAML', { 'agents/a.md': agent('name: [unclosed') }, 'agents/a.md: (frontmatter): invalid YAML'],
    ['a missing description', { 'agents/a.md': agent('name: a') }, 'agents/a.md: description:'],
    ['a wrong type', { 'agents/a.md': agent(`${ok}\nphases:\n  analysis:\n    classification_options: yes`) }, 'agents/a.md: phases.analysis.classification_options:'],
    ['an unknown field', { 'agents/a.md': agent(`${ok}\ncolour: red`) }, 'agents/a.md: (frontmatter): Unrecognized key: "colour"'],
    ['a bad name', { 'agents/a.md': agent('name: Bad Name\ndescription: x') }, 'agents/a.md: name: must be lowercase letters, digits and dashes'],
    ['an unknown category', { 'agents/a.md': agent('name: a\ndescription: x\ncategory: nonsense') }, 'agents/a.md: category: unknown category "nonsense"'],
    ['a phase outside the graph', { 'agents/a.md': agent(`${ok}\nphases:\n  review:\n    description: x`) }, 'agents/a.md: phases.review: node "review" is not in graph "default-agent"'],
    ['a route to a missing node', { 'agents/a.md': agent(`${ok}\nphases:\n  analysis:\n    routes:\n      - { condition: always, target: nowhere }`) }, 'agents/a.md: phases.analysis.routes[0].target: node "nowhere" is not in graph "default-agent"'],
    ['a route with an unknown condition', { 'agents/a.md': agent(`${ok}\nphases:\n  analysis:\n    routes:\n      - { condition: maybe, target: output }`) }, 'agents/a.md: phases.analysis.routes.0.condition:'],
    ['empty instructions', { 'agents/a.md': agent(ok, '') }, 'agents/a.md: (body): the instructions'],
    ['a duplicate name', { 'agents/a.md': agent(ok), 'agents/b.md': agent(ok) }, 'agents/b.md: name: "demo" is already used by assets/agents/a.md'],
    [
      'a layout with a missing node',
      { 'graphs/loop.json': JSON.stringify({ name: 'loop', entry: 'a', nodes: [{ id: 'a', kind: 'llm' }], edges: [{ from: 'a', to: 'b' }] }) },
      'graphs/loop.json: edges[0].to: node "b" is not in the graph',
    ],
    [
      'a cycle without an exit',
      {
        'graphs/loop.json': JSON.stringify({
          name: 'loop',
          entry: 'a',
          nodes: [{ id: 'a', kind: 'llm' }, { id: 'b', kind: 'llm' }],
          edges: [{ from: 'a', to: 'b' }, { from: 'b', to: 'a' }],
        }),
      },
      'graphs/loop.json: edges: graph cycle without an exit through "a", "b"',
    ],
    [
      'a gate without an approved edge',
      { 'graphs/g.json': JSON.stringify({ name: 'g', entry: 'gate', nodes: [{ id: 'gate', kind: 'gate' }, { id: 'x', kind: 'llm' }], edges: [{ from: 'gate', to: 'x', condition: 'rejected' }] }) },
      'graphs/g.json: edges: gate "gate" has no approved edge',
    ],
  ])('%s is refused with the file and field', (_what, files, message) => {
    expect(error(files as Record<string, string>)).toContain(message);
  });
});
