import { defineConfig } from 'vitest/config'

// The real-agent tier (npm run test:agents): real ACP agents installed from test/agents/
// package.json, pointed at a loopback mock model. Slower than the main suite, and kept out of it
// (vitest.config.ts excludes test/agents/).
const summary = process.env.KITH_AGENT_TEST_SUMMARY

export default defineConfig({
  test: {
    include: ['test/agents/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    // Each test runs a hub, two nodes and a real agent; two cores.
    maxWorkers: 1,
    reporters: summary ? ['default', ['json', { outputFile: summary }]] : ['default'],
    // A process that ends while a local pipe to it still holds data resets the pipe, and a read
    // of it fails with ECONNRESET. Every child this tier spawns has its stdio errors noted
    // (test/helpers/cli.ts, notePipeErrors), yet one such reset, on a pipe no test could name,
    // came uncaught after all ten tests of acp-edge.test.ts had passed (CI, 2026-12-06) and
    // failed the run. It is printed here and does not fail the run: the tests go by what the
    // agents and nodes said and did. Any other uncaught error still fails it.
    onUnhandledError: (error) => {
      const e = error as Error & { code?: unknown; syscall?: unknown }
      if (e.code !== 'ECONNRESET' || e.syscall !== 'read') return
      console.error(`[a local pipe was reset, not failing the run] ${e.stack ?? e.message}`)
      return false
    },
  },
})
