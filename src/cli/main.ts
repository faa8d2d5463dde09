import { KithError, toExitCode } from '../errors.js'
import { didYouMean } from '../events/did-you-mean.js'
import { kithVersion } from '../version.js'
import { commandNames, findCommand, loadAll } from './command-index.js'
import { endQuietlyWhenStdoutCloses, stdio, type Out } from './io.js'

/** The general help: every command with its declared summary. */
export async function mainHelp(): Promise<string> {
  const lines: string[] = []
  for (const { module } of await loadAll()) {
    for (const c of [module.command, ...(module.more ?? [])]) {
      lines.push(`  ${c.spec.name.padEnd(15)} ${c.spec.summary}`)
    }
  }
  return `kith ${kithVersion}: run AI coding agents across your machines

Usage: kith COMMAND [options]   (kith help COMMAND, or kith COMMAND --help, for details)

Commands:
${lines.join('\n')}

State lives in KITH_HOME (default ~/.kith). Exit codes: 0 ok, 1 failed (or a hub did not take
a change; it is kept and sent on the next sync), 2 usage, 3 not initialised (run kith init),
4 insecure key file, 5 not found (no such agent, channel, device, card…).`
}

function unknownCommand(command: string): KithError {
  const near = didYouMean(command, commandNames, 1)[0]
  const hint = near === undefined ? '' : ` (did you mean kith ${near}?)`
  return new KithError(
    'usage',
    `unknown command ${JSON.stringify(command)}${hint}\nkith help lists the commands`,
  )
}

/** `kith help [COMMAND [SUBCOMMAND]]`: the general help, or one command's from its declaration. */
async function help(words: string[], out: Out): Promise<number> {
  if (words.length === 0) {
    out.line(await mainHelp())
    return 0
  }
  const entry = findCommand(words[0]!)
  if (entry === undefined) throw unknownCommand(words[0]!)
  const module = await entry.load()
  // `kith help hub add` finds the declaration named `hub add|list|rm`.
  const more = (module.more ?? []).find((c) =>
    c.spec.name
      .split(' ')[1]
      ?.split('|')
      .includes(words[1] ?? ''),
  )
  out.line((more ?? module.command).help())
  return 0
}

export async function main(argv: string[], out: Out = stdio): Promise<number> {
  const [command, ...rest] = argv
  if (out === stdio) endQuietlyWhenStdoutCloses()
  try {
    switch (command) {
      case undefined:
        out.line(await mainHelp())
        return 2
      case '--help':
      case '-h':
        out.line(await mainHelp())
        return 0
      case 'help':
        return await help(rest, out)
      case '--version':
      case 'version':
        out.line(kithVersion)
        return 0
      default: {
        const entry = findCommand(command)
        if (entry === undefined) throw unknownCommand(command)
        return await (await entry.load()).run(rest, out)
      }
    }
  } catch (err) {
    if (err instanceof KithError) out.err(`kith: ${err.message}`)
    else {
      out.err(
        `kith: unexpected error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`,
      )
    }
    return toExitCode(err)
  }
}
