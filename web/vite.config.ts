import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import react from '@vitejs/plugin-react';
import { defineConfig, type Plugin } from 'vite';

const here = path.dirname(fileURLToPath(import.meta.url));
const outDir = path.join(here, 'dist');

/**
 * Writes a brotli and a gzip copy next to every text asset, so that the server sends them compressed
 * (@fastify/static's preCompressed) without compressing on each request.
 */
function precompress(): Plugin {
  return {
    name: 'evalgate-precompress',
    apply: 'build',
    closeBundle() {
      const walk = (dir: string): string[] =>
        fs
          .readdirSync(dir, { withFileTypes: true })
          .flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));
      for (const file of walk(outDir)) {
        if (!/\.(js|css|html|svg|json)$/.test(file)) continue;
        const data = fs.readFileSync(file);
        fs.writeFileSync(
          `${file}.br`,
          brotliCompressSync(data, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }),
        );
        fs.writeFileSync(`${file}.gz`, gzipSync(data, { level: 9 }));
      }
    },
  };
}

// The dashboard's web app: built into web/dist by `npm run build` (and so by `npm ci`), served by the
// server at /. `npx vite --config web/vite.config.ts` serves it with hot reload, the API proxied to :8080.
export default defineConfig({
  root: here,
  base: '/',
  plugins: [react(), precompress()],
  build: {
    outDir,
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: false,
    chunkSizeWarningLimit: 600,
  },
  server: { proxy: { '/dashboard/api': 'http://127.0.0.1:8080' } },
});
