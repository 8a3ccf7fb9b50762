import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The layer rules of .dependency-cruiser.cjs each speak of modules that exist: a rule whose paths match nothing (a
 * folder renamed, say) passes for nothing, and `npm run lint:layers` would never say so.
 */
const root = path.resolve(import.meta.dirname, '..', '..');
const config = createRequire(import.meta.url)(path.join(root, '.dependency-cruiser.cjs')) as {
  forbidden: {
    name: string;
    from: { path?: string | string[]; pathNot?: string | string[] };
    to: { path?: string | string[]; pathNot?: string | string[]; circular?: boolean };
  }[];
};

function files(dir: string): string[] {
  return fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return files(relative);
    return /\.(ts|vue|mjs|cjs|js)$/.test(entry.name) ? [relative] : [];
  });
}

const modules = ['src-server', 'src-main', 'src-renderer/src', 'build', 'test'].flatMap(files);
const list = (value: string | string[] | undefined) => (value === undefined ? [] : [value].flat());
const matching = (spec: { path?: string | string[]; pathNot?: string | string[] }) =>
  modules.filter(
    (file) =>
      (spec.path === undefined || list(spec.path).some((p) => new RegExp(p).test(file))) &&
      !list(spec.pathNot).some((p) => new RegExp(p).test(file)),
  );

describe('the layer rules', () => {
  const rules = config.forbidden.filter((rule) => !rule.to.circular);

  it.each(rules.map((rule) => [rule.name, rule] as const))('%s speaks of modules that exist', (_name, rule) => {
    expect(matching(rule.from).length).toBeGreaterThan(0);
    // A rule about a dependency (keytar, optional, maybe not installed) names no module of ours to reach.
    if (list(rule.to.path).every((p) => p.startsWith('node_modules'))) return;
    expect(matching(rule.to).length).toBeGreaterThan(0);
  });
});
