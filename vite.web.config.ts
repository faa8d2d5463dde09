import { readdirSync, readFileSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build, defineConfig, type Plugin } from 'vite'

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

/** Fails on any Node-only import (the app and the worker run in a browser). */
function browserOnly(): Plugin {
  return {
    name: 'kith-browser-only',
    enforce: 'pre',
    resolveId(id, importer) {
      const bare = id.startsWith('node:') ? id : id.split('/')[0]!
      if (nodeOnly.has(id) || nodeOnly.has(bare))
        this.error(`the web app imports a Node-only module: ${id} (from ${importer ?? '?'})`)
      return null
    },
  }
}

/**
 * After the app, builds the service worker on its own as one classic script (sw.js) with the
 * list of files the app build emitted as its precache, so a new build is a new worker.
 */
function kithWorker(): Plugin {
  let files: string[] = []
  return {
    name: 'kith-web-worker',
    generateBundle(_options, bundle) {
      // The page itself is cached as `/`; the files Vite copies from public/ are not in the bundle.
      const copied = readdirSync(publicDir, { recursive: true, withFileTypes: true })
        .filter((d) => d.isFile())
        .map((d) => relative(publicDir, join(d.parentPath, d.name)).split(sep).join('/'))
      files = [
        '/',
        ...copied.map((f) => `/${f}`),
        ...Object.keys(bundle)
          .filter((f) => f.startsWith('assets/') && !f.endsWith('.map'))
          .map((f) => `/${f}`),
      ].sort()
    },
    async closeBundle() {
      await build({
        configFile: false,
        logLevel: 'warn',
        plugins: [browserOnly()],
        define: { __KITH_PRECACHE__: JSON.stringify(files) },
        resolve: { conditions: ['browser', 'import', 'module', 'default'] },
        build: {
          outDir: out,
          emptyOutDir: false,
          target: 'es2022',
          minify: process.env.KITH_WEB_NO_MINIFY === undefined,
          sourcemap: true,
          reportCompressedSize: false,
          copyPublicDir: false,
          lib: { entry: sw, formats: ['iife'], name: 'kithServiceWorker', fileName: () => 'sw.js' },
          rollupOptions: { checks: { pluginTimings: false } },
        },
      })
      if (readFileSync(join(out, 'sw.js'), 'utf8').includes('__KITH_PRECACHE__'))
        this.error('sw.js was built without its precache list')
    },
  }
}

export default defineConfig({
  root: app,
  base: '/',
  publicDir,
  logLevel: 'warn',
  plugins: [browserOnly(), kithWorker()],
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
      input: { index: `${app}index.html` },
      // The build's own timing report is noise in npm run build's output.
      checks: { pluginTimings: false },
      output: {
        entryFileNames: 'assets/[name]-[hash].js',
        chunkFileNames: 'assets/[name]-[hash].js',
        assetFileNames: 'assets/[name]-[hash][extname]',
      },
    },
  },
})
