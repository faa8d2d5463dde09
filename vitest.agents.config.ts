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
  },
})
