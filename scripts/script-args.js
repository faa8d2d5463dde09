// The command line of a bench or tool script: its options as node:util parseArgs reads them, plus
// --help, which prints the script's own leading comment (its one usage text), and a one-line
// error naming --help for an unknown or malformed option instead of a stack trace.
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

/** The `//` comment lines a script starts with, unprefixed. */
export function usageOf(scriptUrl) {
  const lines = []
  for (const line of readFileSync(fileURLToPath(scriptUrl), 'utf8').split('\n')) {
    if (!line.startsWith('//')) break
    lines.push(line.replace(/^\/\/ ?/, ''))
  }
  return lines.join('\n')
}

/**
 * @param {string} scriptUrl the script's import.meta.url
 * @param {import('node:util').ParseArgsConfig['options']} options
 */
export function scriptArgs(scriptUrl, options) {
  let parsed
  try {
    parsed = parseArgs({ options: { ...options, help: { type: 'boolean', short: 'h' } } })
  } catch (err) {
    const name = fileURLToPath(scriptUrl).split('/').pop()
    process.stderr.write(
      `${name}: ${err instanceof Error ? err.message : String(err)} (see --help)\n`,
    )
    process.exit(2)
  }
  if (parsed.values.help) {
    process.stdout.write(`${usageOf(scriptUrl)}\n`)
    process.exit(0)
  }
  return parsed
}
