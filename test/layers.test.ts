import { execFile } from 'node:child_process'
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { tempDir } from './helpers/tmp.js'

// The layer check of `npm run check` (npm run layers), run as it is run there: the depcruise
// binary with the project's .dependency-cruiser.cjs. First over a small tree that breaks the
// rules on purpose, to show the check can fail; then over the real src/.

const run = promisify(execFile)
const repo = resolve(import.meta.dirname, '..')
const depcruise = join(repo, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs')

/** What depcruise prints over `cwd`'s src/ (as `npm run layers` runs it), and its exit code. */
async function cruise(cwd: string): Promise<{ code: number; out: string }> {
  const args = [depcruise, 'src', '--config', '.dependency-cruiser.cjs']
  try {
    const { stdout } = await run(process.execPath, args, { cwd, maxBuffer: 64 << 20 })
    return { code: 0, out: stdout }
  } catch (err) {
    const e = err as { code?: unknown; stdout?: unknown }
    if (typeof e.code !== 'number' || typeof e.stdout !== 'string') throw err
    return { code: e.code, out: e.stdout }
  }
}

/** The reported violations, one line each: `rule: from → to` (a cycle by its first module). */
function violations(out: string): string[] {
  return [...out.matchAll(/^\s*error (\S+): (\S+) → *(\S*)/gm)].map(
    ([, rule, from, to]) => `${rule}: ${from} → ${to}`,
  )
}

function write(root: string, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true })
    writeFileSync(join(root, path), text)
  }
}

describe('layer check', () => {
  it('reports an upward import, a cycle and a Node built-in in the pure core', async () => {
    const dir = tempDir('kith-layers-')
    copyFileSync(join(repo, '.dependency-cruiser.cjs'), join(dir, '.dependency-cruiser.cjs'))
    write(dir, {
      'tsconfig.json': JSON.stringify({
        compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true },
        include: ['src'],
      }),
      // events/ is the bottom layer: importing node/ runs upward.
      'src/events/x.ts': "import { y } from '../node/y.js'\nexport const x = y + 1\n",
      'src/node/y.ts': 'export const y = 1\n',
      // Two store/ modules that import each other.
      'src/store/a.ts': "import { b } from './b.js'\nexport const a = (): number => b()\n",
      'src/store/b.ts': "import { a } from './a.js'\nexport const b = (): number => a()\n",
      // grants/ runs in the browser: no Node built-in.
      'src/grants/g.ts': "import { createHash } from 'node:crypto'\nexport const g = createHash\n",
    })
    const { code, out } = await cruise(dir)
    expect(code).not.toBe(0)
    const seen = violations(out)
    expect(seen).toContain('no-upward-from-events: src/events/x.ts → src/node/y.ts')
    expect(seen.filter((s) => s.startsWith('no-cycles: src/store/'))).not.toHaveLength(0)
    expect(seen).toContain('pure-core-no-node: src/grants/g.ts → crypto')
  })

  it('finds no violation in src/', async () => {
    const { code, out } = await cruise(repo)
    expect(violations(out)).toEqual([])
    expect(code).toBe(0)
  })
})
