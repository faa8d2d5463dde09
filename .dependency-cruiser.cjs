// The layer order of src/ (docs/ARCHITECTURE.md), checked by `npm run check` (npm run layers):
//   cli → node → {acp, hub, pairing, link} → {grants, store, identity, verify} → events
// with errors.ts, version.ts and types/ beneath everything. Nothing imports upward, nothing is
// in a cycle, and the pure folders import no Node built-in and no I/O package.
const layers = [
  ['events'],
  ['grants', 'store', 'identity', 'verify'],
  ['acp', 'hub', 'pairing', 'link', 'web', 'notify'],
  ['node'],
  ['cli'],
]
const folder = (names) => `^src/(${names.join('|')})/`
const above = (i) => layers.slice(i + 1).flat()

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      severity: 'error',
      comment:
        'A cycle makes two modules one; split along the seam or move the shared part down. A type-only import (the verifier type the table reads grants through) is erased at build and loads nothing, so it closes no cycle.',
      from: { path: '^src/' },
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    ...layers.slice(0, -1).map((names, i) => ({
      name: `no-upward-from-${names.join('-')}`,
      severity: 'error',
      comment: `${names.join(', ')} may import only what lies beneath them.`,
      from: { path: folder(names) },
      to: { path: folder(above(i)) },
    })),
    {
      name: 'base-imports-nothing',
      severity: 'error',
      comment: 'errors.ts, version.ts and types/ are beneath every layer.',
      from: { path: '^src/(errors|version)\\.ts$|^src/types/' },
      to: { path: '^src/(?!(errors|version)\\.ts$|types/)' },
    },
    {
      name: 'pure-core-no-node',
      severity: 'error',
      comment:
        'events, grants and pairing/protocol run in the browser too: no Node built-in, no I/O package.',
      from: { path: '^src/(events|grants|pairing/protocol)/' },
      to: {
        dependencyTypes: ['core'],
      },
    },
    {
      name: 'pure-core-no-io-packages',
      severity: 'error',
      comment: 'Sockets, sqlite and processes belong to the I/O layers.',
      from: { path: '^src/(events|grants|pairing/protocol)/' },
      to: { path: 'node_modules/(ws|better-sqlite3|koffi|@agentclientprotocol)/' },
    },
    {
      name: 'relay-client-no-node',
      severity: 'error',
      comment:
        'The relay client is handed its WebSocket so it runs in a browser too; the backoff and what an outbox answer means run there too.',
      from: { path: '^src/link/(relay-client|frames|backoff|outbox-answer)\\.ts$' },
      to: { dependencyTypes: ['core'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'node'] },
  },
}
