/**
 * The MCP Apps of the server's /mcp (docs/mcp.md#the-approval-card-mcp-apps), for build/build.mjs: each app's
 * index.html with its script (bundled by esbuild, dependencies included) and its stylesheet inlined, into one file
 * out/mcp-apps/<app>.html. A host loads a `ui://` resource's text into a sandboxed frame that may fetch nothing, so
 * the page must carry everything it runs.
 */
import fs from 'node:fs/promises';
import path from 'node:path';

/** Each app is a folder with index.html, styles.css and main.ts. */
const APPS_DIR = 'src-server/http/mcp/apps';
const APPS = ['approval-card'];
const STYLESHEET = '<link rel="stylesheet" href="./styles.css" />';
const SCRIPT = '<script type="module" src="./main.ts"></script>';

/** index.html with the two tags replaced by what they load; a replacement function, as `$` is common in scripts. */
async function inlined(esbuild, root, dir) {
  const page = await fs.readFile(path.join(dir, 'index.html'), 'utf8');
  if (!page.includes(STYLESHEET) || !page.includes(SCRIPT)) {
    throw new Error(`${path.relative(root, dir)}/index.html must load ./styles.css and ./main.ts as written here`);
  }
  const styles = await esbuild.transform(await fs.readFile(path.join(dir, 'styles.css'), 'utf8'), {
    loader: 'css',
    minify: true,
  });
  const bundle = await esbuild.build({
    absWorkingDir: root,
    entryPoints: [path.join(dir, 'main.ts')],
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    legalComments: 'none',
    logLevel: 'silent',
  });
  const script = bundle.outputFiles[0].text;
  // esbuild escapes these in the code it writes; a page that closed its own tag early would run half a script.
  if (/<\/script/i.test(script) || /<\/style/i.test(styles.code)) throw new Error('a closing tag inside inlined code');
  return page
    .replace(STYLESHEET, () => `<style>${styles.code}</style>`)
    .replace(SCRIPT, () => `<script>${script}</script>`);
}

export async function buildMcpApps(root) {
  const esbuild = await import('esbuild');
  try {
    const pages = await Promise.all(APPS.map((app) => inlined(esbuild, root, path.join(root, APPS_DIR, app))));
    await fs.mkdir(path.join(root, 'out', 'mcp-apps'), { recursive: true });
    for (const [i, app] of APPS.entries()) {
      await fs.writeFile(path.join(root, 'out', 'mcp-apps', `${app}.html`), pages[i]);
    }
    return { ok: true, output: '' };
  } catch (error) {
    const messages = await esbuild.formatMessages(error.errors ?? [], { kind: 'error' });
    return { ok: false, output: messages.join('\n') || `${error.stack ?? error}\n` };
  }
}
