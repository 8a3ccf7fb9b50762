import { resolve } from 'node:path';
import vue from '@vitejs/plugin-vue';
import { defineConfig } from 'vite';

/** The studio alone, for the headless server (`npm start`): same output as electron-vite's renderer build. */
export default defineConfig({
  root: __dirname,
  base: '/ui/',
  plugins: [vue()],
  resolve: { alias: { '@contracts': resolve(__dirname, '../src-server/contracts') } },
  build: { outDir: resolve(__dirname, '../out/renderer'), emptyOutDir: true },
});
