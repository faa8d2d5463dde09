import js from '@eslint/js'
import tseslint from 'typescript-eslint'

// Pure protocol folders may not touch sockets, files, processes or sqlite (docs/ARCHITECTURE.md).
const pureFolders = ['src/events/**', 'src/grants/**', 'src/pairing/protocol/**']
const ioModules = [
  'ws',
  'better-sqlite3',
  'node:net',
  'node:fs',
  'node:fs/promises',
  'node:child_process',
  'node:http',
  'node:https',
  'node:worker_threads',
  'fs',
  'net',
  'child_process',
]

export default tseslint.config(
  {
    // Plain JS run as processes (bin, scripts, fixture agents); type-aware rules need TS sources.
    ignores: [
      'dist/**',
      'node_modules/**',
      'coverage/**',
      'bin/**',
      'scripts/**/*.js',
      '.dependency-cruiser.cjs',
      'test/fixtures/**/*.mjs',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      'no-empty': ['error', { allowEmptyCatch: false }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    files: pureFolders,
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: ioModules.map((name) => ({
            name,
            message: 'pure module: no I/O (docs/ARCHITECTURE.md, Layers)',
          })),
        },
      ],
    },
  },
  {
    // Every Kith kind is made in src/events (issue 32): an event template written elsewhere drifts
    // from the one its parser reads. A template is an object literal with `tags` and a `kind:`
    // that is a Kind.* member or a number; filters (`kinds:`) and `{ kind, created_at }` passed
    // to authTagFor are not templates.
    files: ['src/**/*.ts', 'src/**/*.tsx'],
    ignores: [
      'src/events/**',
      // The NIP-OA grant modules make their own kinds (4140, 4141): grants/ is the pure core too,
      // and the grant's signature covers exactly what grant.ts and revocation.ts build and parse.
      'src/grants/grant.ts',
      'src/grants/revocation.ts',
    ],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector:
            "ObjectExpression:has(> Property[key.name='tags']):has(> Property[key.name='kind'][value.type='MemberExpression'][value.object.name='Kind'])",
          message: 'make Kith events in src/events (a make* function there), not inline here',
        },
        {
          selector:
            "ObjectExpression:has(> Property[key.name='tags']):has(> Property[key.name='kind'][value.type='Literal'])",
          message: 'make Kith events in src/events (a make* function there), not inline here',
        },
      ],
    },
  },
  {
    files: ['eslint.config.js'],
    extends: [tseslint.configs.disableTypeChecked],
  },
)
