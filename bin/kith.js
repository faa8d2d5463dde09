#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=2 --heap-growing-percent=30
// A small young generation (2 MB semi-spaces), old space grown by 30% at a time instead of V8's
// dynamic factor (up to 4× after a fast allocation burst), and at most two malloc arenas (glibc
// allows 8 per core, each libuv and worker thread takes its own) keep a hub's peak RSS and an idle
// node's low. Hub peak RSS under bench:hub 110 → 93 MB with the growing factor (issue 18), no
// throughput cost the 2-core machine could tell from noise (docs/performance.md).
import { main } from '../dist/cli/main.js'

process.exitCode = await main(process.argv.slice(2))
