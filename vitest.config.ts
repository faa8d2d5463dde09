import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { configDefaults, defineConfig } from 'vitest/config'
import { tiers, type Tier } from './test/tiers/tiers.js'

// KITH_TEST_SUMMARY=FILE also writes vitest's JSON report there (.ci/run prints a plain
// "N passed, N failed" line from it).
const summary = process.env.KITH_TEST_SUMMARY

/** Test files under test/, the real-agent tier's apart (it is its own run: vitest.agents.config.ts). */
function testFiles(dir = 'test'): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name)
    if (e.isDirectory()) return path === join('test', 'agents') ? [] : testFiles(path)
    return e.name.endsWith('.test.ts') ? [path] : []
  })
}

/** A file in no tier would silently never run; a file in two would run twice. */
function checkEveryFileHasOneTier(): void {
  const patterns = Object.entries(tiers) as [Tier, string[]][]
  const problems = testFiles().flatMap((file) => {
    const inTiers = patterns.filter(([, globs]) => globs.some((g) => matches(g, file)))
    if (inTiers.length === 1) return []
    const where = inTiers.length === 0 ? 'no tier' : `${inTiers.map(([t]) => t).join(' and ')}`
    return [`${file} is in ${where}: give it one in test/tiers/tiers.ts`]
  })
  if (problems.length > 0) throw new Error(problems.join('\n'))
}

/** The glob shapes tiers.ts uses: `*` within a name, `{a,b}` alternatives. */
function matches(glob: string, file: string): boolean {
  const source = glob
    .replace(/[.+^$()|[\]\\]/g, '\\$&')
    .replace(/\{([^}]*)\}/g, (_, alts: string) => `(${alts.split(',').join('|')})`)
    .replace(/\*/g, '[^/]*')
  return new RegExp(`^${source}$`).test(file.split('\\').join('/'))
}

checkEveryFileHasOneTier()

const project = (name: Tier, guarded: boolean) => ({
  extends: true as const,
  test: {
    name,
    include: tiers[name],
    // The guard holds unit and network to their promise (no sockets; no processes).
    setupFiles: guarded ? ['test/tiers/guard.ts'] : [],
    env: { KITH_TEST_TIER: name },
    ...(name === 'unit' ? { pool: 'threads' as const } : {}),
  },
})

export default defineConfig({
  test: {
    exclude: [...configDefaults.exclude, 'test/agents/**'],
    // Generous: e2e tests run several real processes on a 2-core machine, maybe loaded by other
    // work; a hang still fails.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Hub tests spawn real processes; two cores, so keep parallelism modest.
    maxWorkers: 2,
    reporters: summary ? ['default', ['json', { outputFile: summary }]] : ['default'],
    projects: [
      project('unit', true),
      project('network', true),
      project('processes', false),
      project('browser', false),
    ],
  },
})
