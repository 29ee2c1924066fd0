/// <reference types="node" />
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The console is served by the gateway under /console/ with a CSP that allows no inline script
// or style: no module-preload polyfill (an inline script) and no asset inlined into the page.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
    // The API reference (/docs) is a page of its own, so the console never loads its renderer.
    rollupOptions: {
      input: {
        console: fileURLToPath(new URL('index.html', import.meta.url)),
        docs: fileURLToPath(new URL('docs.html', import.meta.url)),
      },
    },
    chunkSizeWarningLimit: 2048,
  },
});
