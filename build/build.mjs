/**
 * `npm start`'s build step (also `npm run serve`, and before the tests and the bench): brings the four outputs up
 * to date and rebuilds only those whose inputs changed. Each output keeps a stamp, the SHA-256 of its inputs'
 * paths and contents (and of this script), in a `.build-stamp` file inside it; nothing changed and the output
 * there means nothing to do, which takes a few milliseconds. Plain JavaScript, so that the check itself needs
 * no compiler.
 *
 *   generated/     the assets' manifests and layouts (build/build-assets.ts)
 *   out/renderer/  the studio (vite, src-renderer/vite.config.ts)
 *   out/server/    the server bundled into one ES module, cli.js (esbuild; node_modules stay external)
 *   out/mcp-apps/  the MCP Apps /mcp offers, one self-contained HTML file each (build/build-mcp-apps.mjs)
 *
 * Usage: node build/build.mjs [assets] [studio] [server] [mcp-apps] [--force]   (no name: all four)
 *
 * It prints one line per output it builds; the bundlers' own output (their warnings about third-party code
 * included) is shown only when a build fails, and then the script exits with 1.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const require = createRequire(import.meta.url);
const STAMP = '.build-stamp';

/** What each output is made from (folders are read whole, test files left out) and how it is made. */
const targets = {
  assets: {
    label: 'the assets',
    inputs: ['assets', 'src-server/assets', 'src-server/contracts', 'build/build-assets.ts', 'package-lock.json'],
    outDir: 'generated',
    output: 'generated/manifests',
    build: () => run(process.execPath, ['--import', 'tsx', 'build/build-assets.ts']),
  },
  studio: {
    label: 'the studio',
    inputs: ['src-renderer', 'src-server/contracts', 'package-lock.json'],
    outDir: 'out/renderer',
    output: 'out/renderer/index.html',
    build: () =>
      run(process.execPath, [
        path.join(path.dirname(require.resolve('vite/package.json')), 'bin', 'vite.js'),
        'build',
        '--config',
        'src-renderer/vite.config.ts',
      ]),
  },
  server: {
    label: 'the server',
    inputs: ['src-server', 'package-lock.json'],
    outDir: 'out/server',
    output: 'out/server/cli.js',
    build: bundleServer,
  },
  'mcp-apps': {
    label: 'the MCP apps',
    inputs: ['src-server/http/mcp/apps', 'src-server/contracts', 'build/build-mcp-apps.mjs', 'package-lock.json'],
    outDir: 'out/mcp-apps',
    output: 'out/mcp-apps/approval-card.html',
    build: async () => (await import('./build-mcp-apps.mjs')).buildMcpApps(root),
  },
};

async function bundleServer() {
  const esbuild = await import('esbuild');
  try {
    await esbuild.build({
      absWorkingDir: root,
      entryPoints: ['src-server/cli.ts'],
      outfile: 'out/server/cli.js',
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      // Dependencies load from node_modules at run time, as they do under tsx: only our code is bundled.
      packages: 'external',
      sourcemap: 'linked',
      logLevel: 'silent',
    });
    return { ok: true, output: '' };
  } catch (error) {
    const messages = await esbuild.formatMessages(error.errors ?? [], { kind: 'error' });
    return { ok: false, output: messages.join('\n') || String(error) };
  }
}

/** Runs a build tool with its output held back: shown only if it fails. */
function run(command, args) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', (error) => resolve({ ok: false, output: `${output}${error.message}\n` }));
    child.on('close', (code) => resolve({ ok: code === 0, output }));
  });
}

async function listFiles(relative) {
  const full = path.join(root, relative);
  const stat = await fs.stat(full).catch(() => undefined);
  if (!stat) return [];
  if (!stat.isDirectory()) return [relative];
  const files = [];
  for (const entry of await fs.readdir(full, { withFileTypes: true })) {
    if (/\.(test|spec)\.ts$/.test(entry.name)) continue;
    files.push(...(await listFiles(path.join(relative, entry.name))));
  }
  return files;
}

const self = await fs.readFile(import.meta.filename);

async function stampOf(target) {
  const hash = createHash('sha256').update(self);
  const files = (await Promise.all(target.inputs.map(listFiles))).flat().sort();
  for (const file of files) {
    hash.update(`\0${file}\0`);
    hash.update(await fs.readFile(path.join(root, file)));
  }
  return hash.digest('hex');
}

async function main() {
  const args = process.argv.slice(2);
  const force = args.includes('--force');
  const names = args.filter((a) => !a.startsWith('--'));
  for (const name of names) {
    if (!(name in targets)) {
      console.error(`build: unknown output "${name}" (expected ${Object.keys(targets).join(', ')})`);
      process.exit(2);
    }
  }
  for (const name of names.length ? names : Object.keys(targets)) {
    const target = targets[name];
    const stampFile = path.join(root, target.outDir, STAMP);
    const stamp = await stampOf(target);
    const previous = await fs.readFile(stampFile, 'utf8').catch(() => '');
    if (!force && previous.trim() === stamp && existsSync(path.join(root, target.output))) continue;

    console.log(`building ${target.label}…`);
    const result = await target.build();
    if (!result.ok) {
      process.stderr.write(result.output);
      console.error(`build: building ${target.label} failed (output above)`);
      process.exit(1);
    }
    await fs.mkdir(path.dirname(stampFile), { recursive: true });
    await fs.writeFile(stampFile, `${stamp}\n`);
  }
}

await main();
