import { hostname } from 'node:os'
import { readConfig, writeConfig } from '../../identity/config.js'
import { resolveKithHome } from '../../identity/home.js'
import type { NostrEvent } from '../../events/event.js'
import { loadIdentity, prepareJoiningDevice } from '../../identity/keys.js'
import { describeReports, syncHubs } from '../../node/fleet.js'
import { GrantBook, keepSealing } from '../../node/grant-book.js'
import { declare } from '../declare.js'
import type { Out } from '../io.js'
import { npub } from '../key-text.js'
import { runJoinExchange } from './join-flow.js'
import { openLocalFleet } from '../local-node.js'

export const joinCommand = declare({
  name: 'join',
  summary: 'join a fleet on a new machine with a code from kith pair',
  usage: [
    'kith join CODE [--name NAME] [--yes]',
    'kith join - [--name NAME]        (read the code from stdin)',
  ],
  arity: { min: 1, max: 1, error: 'kith join takes one CODE (or -)' },
  options: {
    name: {
      type: 'string',
      value: 'NAME',
      description:
        "the name this machine proposes (default: the hostname); the inviter's kith pair --name wins, and both screens show the one it takes",
    },
    yes: {
      type: 'boolean',
      description: 'accepted for scripts: the only question is the 6 digits, always asked',
    },
  },
  about: `Joins this machine to a fleet with a code from kith pair on the owner's machine. Works on a
machine with no keys yet: it makes this device's key (never an owner key), shows whose fleet
it joins and through which hub, and contacts it. Both screens then show the same 6 digits:
compare them, do not type them anywhere, and answer y on both sides (the one question here). On success this machine has a
device grant from the owner and the fleet's hubs; start it with kith up.`,
})

export async function runJoin(argv: string[], out: Out): Promise<number> {
  const parsed = joinCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values, positionals } = parsed
  const home = resolveKithHome()
  let device: ReturnType<typeof prepareJoiningDevice> | undefined
  const proposed = values.name ?? readConfig(home)?.name ?? hostname()
  let name = proposed
  const { code, hubs } = await runJoinExchange(
    {
      text: positionals[0]!,
      role: 'device',
      yes: values.yes === true,
      check: () => undefined,
      key: () => {
        device = prepareJoiningDevice(home)
        return { pubkey: device.pubkey, secret: device.secret, name: proposed }
      },
      enroll: (code, enrollment, hubs) => {
        device?.secret.fill(0)
        const book = GrantBook.open(home, enrollment.fleet)
        try {
          book.learn([...enrollment.chain, enrollment.grant])
          keepSealing(book, enrollment)
        } finally {
          book.close()
        }
        // One name: the one the inviter gave it (shown on its screen), in the grant.
        name = grantName(enrollment.grant) ?? proposed
        writeConfig(home, { version: 1, name, owner: code.owner, fleet: enrollment.fleet, hubs })
      },
    },
    out,
  )
  out.line(`joined the fleet of ${code.name} as ${name} (${npub(device!.pubkey)})`)
  if (name !== proposed) {
    out.line(`  (named by the inviter; it proposed ${proposed}; rename it with kith device rename)`)
  }
  out.line(`hubs: ${hubs.join(', ')}`)
  // Holding its grant, the node learns the rest of the fleet (grants, revocations) from its hubs.
  const node = openLocalFleet(loadIdentity(home))
  try {
    const reports = await syncHubs(node, Math.floor(Date.now() / 1000), (l) => out.err(l))
    for (const l of describeReports(reports)) out.line(`  ${l}`)
  } finally {
    node.book.close()
  }
  out.line('start this node with: kith up')
  return 0
}

/** The name on a grant, if it has one. */
export function grantName(grant: NostrEvent): string | undefined {
  const name = grant.tags.find((t) => t[0] === 'name')?.[1]
  return name === undefined || name === '' ? undefined : name
}

/** What the command index loads. */
export { joinCommand as command, runJoin as run }
