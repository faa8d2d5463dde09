import js from '@eslint/js'
import tseslint from 'typescript-eslint'

// Pure protocol folders may not touch sockets, files, processes or sqlite (STYLE.md).
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
        { paths: ioModules.map((name) => ({ name, message: 'pure module: no I/O (STYLE.md)' })) },
      ],
    },
  },
  {
    files: ['eslint.config.js'],
    extends: [tseslint.configs.disableTypeChecked],
  },
)
