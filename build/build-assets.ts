import path from 'node:path';
import { compileAssets, writeGenerated } from '../src-server/assets/asset-compiler';
import { AssetError } from '../src-server/assets/asset-error';

/** `npm run build:assets`: assets/ → generated/. Exits 1 with the file, line and field of the first problem. */
const root = path.resolve(import.meta.dirname, '..');
const assetsDir = path.resolve(process.argv[2] ?? path.join(root, 'assets'));
const outDir = path.resolve(process.argv[3] ?? path.join(root, 'generated'));

try {
  const compiled = compileAssets(assetsDir);
  writeGenerated(outDir, compiled);
  const agents = compiled.manifests.filter((m) => m.kind === 'agent').length;
  process.stdout.write(
    `build-assets: ${agents} agents, ${compiled.manifests.length - agents} commands, ${compiled.layouts.length} graph layouts → ${path.relative(process.cwd(), outDir) || '.'}\n`,
  );
} catch (error) {
  if (!(error instanceof AssetError)) throw error;
  process.stderr.write(`build-assets: ${error.message}\n`);
  process.exit(1);
}
