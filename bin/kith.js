#!/usr/bin/env -S node --max-semi-space-size=4
// A small young generation keeps a hub's peak RSS near 150 MB under full ingest load instead of
// ~190 MB, with no measured throughput cost (docs/performance.md).
import { main } from '../dist/cli/main.js'

process.exitCode = await main(process.argv.slice(2))
