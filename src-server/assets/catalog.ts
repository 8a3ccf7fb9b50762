import fs from 'node:fs';
import path from 'node:path';
import {
  GraphLayoutSchema,
  ManifestSchema,
  type AssetKind,
  type GraphLayout,
  type Manifest,
} from '../contracts/assets';
import { getLogger } from '../log';
import { DEFAULT_LAYOUTS } from './asset-compiler';

const log = getLogger('svc.assets');

export interface CatalogEntry {
  manifest: Manifest;
  layout: GraphLayout;
}

/** Agents and commands as the build script generated them; read once at start (a restart picks up new ones). */
export interface Catalog {
  list(kind: AssetKind): Manifest[];
  /** An agent or a command by name: both run through POST /graphs/{name}/run. */
  get(name: string): CatalogEntry | undefined;
  counts(): { agents: number; commands: number };
  /** The shipped custom layouts by name (a category): a stored agent runs on these or the built-in defaults. */
  layouts: ReadonlyMap<string, GraphLayout>;
  /** The text of a built-in's shipped file, when it is beside the generated folder (copying one starts from it). */
  source(name: string): string | null;
}

export const DEFAULT_GENERATED_DIR = path.resolve(import.meta.dirname, '..', '..', 'generated');

function readJson(file: string): unknown {
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

export function loadCatalog(generatedDir = DEFAULT_GENERATED_DIR): Catalog {
  const entries = new Map<string, CatalogEntry>();
  for (const kind of ['agents', 'commands'] as const) {
    const dir = path.join(generatedDir, 'manifests', kind);
    if (!fs.existsSync(dir)) continue;
    for (const file of fs
      .readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .sort()) {
      const manifest = ManifestSchema.parse(readJson(path.join(dir, file)));
      const layout = GraphLayoutSchema.parse(readJson(path.join(generatedDir, 'graphs', `${manifest.graph}.json`)));
      entries.set(manifest.name, { manifest, layout });
    }
  }
  if (entries.size === 0) log.warn(`no agents or commands in ${generatedDir}: run npm run build:assets`);
  const layouts = new Map<string, GraphLayout>();
  const graphsDir = path.join(generatedDir, 'graphs');
  for (const file of fs.existsSync(graphsDir) ? fs.readdirSync(graphsDir).filter((f) => f.endsWith('.json')) : []) {
    const layout = GraphLayoutSchema.parse(readJson(path.join(graphsDir, file)));
    if (!Object.values(DEFAULT_LAYOUTS).some((d) => d.name === layout.name)) layouts.set(layout.name, layout);
  }
  const list = (kind: AssetKind) => [...entries.values()].map((e) => e.manifest).filter((m) => m.kind === kind);
  return {
    list,
    get: (name) => entries.get(name),
    counts: () => ({ agents: list('agent').length, commands: list('command').length }),
    layouts,
    // `assets/agents/x.md` sits beside `generated/` in a checkout, and in the desktop app's resources.
    source: (name) => {
      const manifest = entries.get(name)?.manifest;
      if (!manifest) return null;
      try {
        return fs.readFileSync(path.join(generatedDir, '..', manifest.source), 'utf8');
      } catch {
        return null;
      }
    },
  };
}
