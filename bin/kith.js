#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=2
// A small young generation (2 MB semi-spaces) and at most two malloc arenas (glibc allows 8 per
// core, and each verify worker and libuv thread takes its own) keep a hub's peak RSS and an idle
// node's low, with no measured throughput cost (docs/performance.md).
import { main } from '../dist/cli/main.js'

process.exitCode = await main(process.argv.slice(2))
