import { readdirSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { defineConfig, type Plugin } from 'vite'

// The web app (src/web/app, Preact + signals) built into dist/web/app, which `kith up` and
// `kith hub` serve (src/web/serve.ts). Part of `npm run build`. Nothing is loaded from another
// origin; the service worker (src/web/sw) precaches exactly what this build emitted.
const app = fileURLToPath(new URL('./src/web/app/', import.meta.url))
const out = fileURLToPath(new URL('./dist/web/app/', import.meta.url))
const sw = fileURLToPath(new URL('./src/web/sw/sw.ts', import.meta.url))
const publicDir = fileURLToPath(new URL('./src/web/app/public/', import.meta.url))
const nodeOnly = new Set([
  ...builtinModules,
  ...builtinModules.map((m) => `node:${m}`),
  'ws',
  'better-sqlite3',
])

/** Writes the list of emitted files into sw.js (its precache) and fails on any Node import. */
function kithWeb(): Plugin {
  return {
    name: 'kith-web',
    enforce: 'pre',
    resolveId(id, importer) {
      const bare = id.startsWith('node:') ? id : id.split('/')[0]!
      if (nodeOnly.has(id) || nodeOnly.has(bare))
        this.error(`the web app imports a Node-only module: ${id} (from ${importer ?? '?'})`)
      return null
    },
    generateBundle(_options, bundle) {
      // The page itself is cached as `/`; the files Vite copies from public/ are not in the bundle.
      const copied = readdirSync(publicDir, { recursive: true, withFileTypes: true })
        .filter((d) => d.isFile())
        .map((d) => relative(publicDir, join(d.parentPath, d.name)).split(sep).join('/'))
      const files = [
        '/',
        ...copied.map((f) => `/${f}`),
        ...Object.keys(bundle)
          .filter((f) => f.startsWith('assets/') && !f.endsWith('.map'))
          .map((f) => `/${f}`),
      ].sort()
      const chunk = bundle['sw.js']
      if (chunk === undefined || chunk.type !== 'chunk') this.error('sw.js was not built')
      else {
        const placeholder = /([`"'])__KITH_PRECACHE__\1/
        if (!placeholder.test(chunk.code)) this.error('sw.js has no precache placeholder')
        chunk.code = chunk.code.replace(placeholder, JSON.stringify(files))
      }
    },
  }
}

export default defineConfig({
  root: app,
  base: '/',
  publicDir,
  logLevel: 'warn',
  plugins: [kithWeb()],
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  resolve: { conditions: ['browser', 'import', 'module', 'default'] },
  build: {
    outDir: out,
    emptyOutDir: true,
    target: 'es2022',
    minify: process.env.KITH_WEB_NO_MINIFY === undefined,
    sourcemap: true,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
    rollupOptions: {
      input: { index: `${app}index.html`, sw },
      // The build's own timing report is noise in npm run build's output.
      checks: { pluginTimings: false },
      output: {
        entryFileNames: (chunk) => (chunk.name === 'sw' ? 'sw.js' : 'assets/[name]-[hash].js'),
        chunkFileNames: 'assets/[name]-[hash].js',
        assetFileNames: 'assets/[name]-[hash][extname]',
      },
    },
  },
})
