import { configDefaults, defineConfig } from 'vitest/config'

// KITH_TEST_SUMMARY=FILE also writes vitest's JSON report there (.ci/run prints a plain
// "N passed, N failed" line from it).
const summary = process.env.KITH_TEST_SUMMARY

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The real-agent tier is its own run: npm run test:agents (vitest.agents.config.ts).
    exclude: [...configDefaults.exclude, 'test/agents/**'],
    // Generous: e2e tests run several real processes on a 2-core machine; a hang still fails.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Hub tests spawn real processes; two cores, so keep parallelism modest.
    maxWorkers: 2,
    reporters: summary ? ['default', ['json', { outputFile: summary }]] : ['default'],
  },
})
