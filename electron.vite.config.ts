import { resolve } from 'node:path';
import vue from '@vitejs/plugin-vue';
import { defineConfig, externalizeDepsPlugin } from 'electron-vite';

/**
 * Builds the three places code runs: the Electron main process, its preload script, and the
 * studio renderer. The renderer build is also what the headless server serves at /ui.
 */
export default defineConfig({
  main: {
    plugins: [externalizeDepsPlugin()],
    build: {
      outDir: 'out/main',
      // keytar is optional and native: loaded at run time from node_modules when it is there, never bundled.
      rollupOptions: { input: { index: resolve(__dirname, 'src-main/index.ts') }, external: ['keytar'] },
    },
  },
  preload: {
    plugins: [externalizeDepsPlugin()],
    build: {
      outDir: 'out/preload',
      // Sandboxed preload scripts must be CommonJS, whatever the package's module type.
      rollupOptions: {
        input: { index: resolve(__dirname, 'src-main/preload.ts') },
        output: { format: 'cjs', entryFileNames: '[name].cjs' },
      },
    },
  },
  renderer: {
    root: resolve(__dirname, 'src-renderer'),
    base: '/ui/',
    plugins: [vue()],
    resolve: { alias: { '@contracts': resolve(__dirname, 'src-server/contracts') } },
    build: {
      outDir: resolve(__dirname, 'out/renderer'),
      emptyOutDir: true,
      rollupOptions: { input: { index: resolve(__dirname, 'src-renderer/index.html') } },
    },
  },
});
