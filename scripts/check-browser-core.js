// Bundles the protocol core (src/browser-core.ts) for the browser with Vite and fails when any
// module in it needs Node: a `node:` import, a Node built-in, or an I/O package (ws, sqlite).
// Prints the bundle's size. Run by `npm run check` (npm run browser-core).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { build } from 'vite'

const root = new URL('..', import.meta.url).pathname
const out = mkdtempSync(join(tmpdir(), 'kith-browser-core-'))
const nodeOnly = new Set([
  ...builtinModules,
  ...builtinModules.map((m) => `node:${m}`),
  'ws',
  'better-sqlite3',
  'koffi',
])
const offenders = []

try {
  await build({
    root,
    logLevel: 'warn',
    configFile: false,
    build: {
      outDir: out,
      emptyOutDir: true,
      minify: true,
      lib: { entry: join(root, 'src/browser-core.ts'), formats: ['es'], fileName: 'core' },
      rollupOptions: {
        // Anything Node-only is kept out of the bundle and reported, never polyfilled.
        external: (id, importer) => {
          const bare = id.startsWith('node:') ? id : id.split('/')[0]
          if (nodeOnly.has(id) || nodeOnly.has(bare)) {
            offenders.push(`${id} (imported by ${importer ?? '?'})`)
            return true
          }
          return false
        },
      },
    },
    resolve: { conditions: ['browser', 'import', 'module', 'default'] },
  })
  if (offenders.length > 0) {
    console.error('the browser core imports Node-only modules:')
    for (const o of offenders) console.error(`  ${o}`)
    process.exitCode = 1
  } else {
    const code = readFileSync(join(out, 'core.js'))
    console.log(
      JSON.stringify({
        browserCore: 'ok',
        bytes: code.length,
        gzipBytes: gzipSync(code).length,
      }),
    )
  }
} finally {
  rmSync(out, { recursive: true, force: true })
}
