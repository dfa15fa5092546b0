// The console's build (console/ -> console/dist) and its unit tests (Vitest).
// `HLOSERVE_CONSOLE_API` points the dev server's proxy at a running engine's console port.
import { defineConfig } from 'vitest/config';
import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';

const consoleRoot = fileURLToPath(new URL('./console', import.meta.url));
const api = process.env.HLOSERVE_CONSOLE_API ?? 'http://127.0.0.1:8003';

export default defineConfig({
  root: consoleRoot,
  publicDir: 'static',
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: false,
  },
  server: {
    proxy: {
      '/api': { target: api, changeOrigin: false, ws: true },
    },
  },
  test: {
    root: consoleRoot,
    include: ['src/**/*.test.ts'],
    environment: 'node',
  },
});
