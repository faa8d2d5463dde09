import { KithError, toExitCode } from '../errors.js'
import { kithVersion } from '../version.js'
import { runHubConfig } from './commands/hub-config.js'
import { runHubServe } from './commands/hub-serve.js'
import { runInit } from './commands/init.js'
import { runWhoami } from './commands/whoami.js'
import { stdio, type Out } from './io.js'

export const mainHelp = `kith ${kithVersion}: run AI coding agents across your machines

Usage: kith COMMAND [options]   (kith COMMAND --help for details)

Commands:
  init            create this machine's device key (and, on your first machine, your owner key)
  whoami          show owner, device and hubs
  hub             run a standalone hub (Nostr relay with NIP-42 auth)
  hub add URL     use a hub; hub list, hub rm URL

State lives in KITH_HOME (default ~/.kith). Exit codes: 0 ok, 1 failed, 2 usage,
3 not initialised (run kith init), 4 insecure key file.`

export async function main(argv: string[], out: Out = stdio): Promise<number> {
  const [command, ...rest] = argv
  try {
    switch (command) {
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        out.line(mainHelp)
        return command === undefined ? 2 : 0
      case '--version':
      case 'version':
        out.line(kithVersion)
        return 0
      case 'init':
        return await runInit(rest, out)
      case 'whoami':
        return runWhoami(rest, out)
      case 'hub': {
        const sub = rest[0]
        if (sub === 'add' || sub === 'list' || sub === 'rm')
          return runHubConfig(sub, rest.slice(1), out)
        return await runHubServe(rest, out)
      }
      default:
        throw new KithError('usage', `unknown command ${JSON.stringify(command)}\n\n${mainHelp}`)
    }
  } catch (err) {
    if (err instanceof KithError) out.err(`kith: ${err.message}`)
    else
      out.err(
        `kith: unexpected error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`,
      )
    return toExitCode(err)
  }
}
