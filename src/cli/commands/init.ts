import { resolveKithHome } from '../../identity/home.js'
import { initIdentity } from '../../identity/keys.js'
import { declare } from '../declare.js'
import { readSecretFromStdin, type Out } from '../io.js'
import { npub, parseSecretText } from '../key-text.js'
import { loadIdentity } from '../../identity/keys.js'
import { describeReports, ensureOwnDeviceGrant, syncHubs } from '../../node/fleet.js'
import { openLocalFleet } from '../local-node.js'

/** With the owner key here, the device gets its grant at init and it goes to the hubs at once. */
async function issueOwnDeviceGrant() {
  const id = loadIdentity(resolveKithHome())
  if (id.config.fleet === undefined) return undefined
  const node = openLocalFleet(id)
  try {
    const now = Math.floor(Date.now() / 1000)
    const event = ensureOwnDeviceGrant(node, now)
    if (event === undefined) return undefined
    return { event, reports: await syncHubs(node, now) }
  } finally {
    node.book.close()
  }
}

export const initCommand = declare({
  name: 'init',
  summary: "create this machine's device key (and, on your first machine, your owner key)",
  usage: ['kith init [--name NAME] [--owner-key-stdin] [--json]'],
  arity: { min: 0, max: 0, error: 'kith init takes no arguments' },
  options: {
    name: {
      type: 'string',
      value: 'NAME',
      description: "this machine's name in the fleet (default: the hostname)",
    },
    'owner-key-stdin': {
      type: 'boolean',
      description:
        'use an existing Nostr identity as owner: read its nsec or 64-hex secret from stdin (not echoed on a terminal) instead of creating one',
    },
    json: { type: 'boolean', description: 'print the result as JSON' },
  },
  about: `Creates this machine's identity in KITH_HOME (default ~/.kith):
  - a device key, made here and never exported;
  - on a person's first machine, an owner key (the person's identity).
Running it again never overwrites a key: it says what already exists.`,
})

export async function runInit(argv: string[], out: Out): Promise<number> {
  const parsed = initCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values } = parsed
  const home = resolveKithHome()
  const ownerSecret = values['owner-key-stdin']
    ? parseSecretText(await readSecretFromStdin('owner secret (nsec or hex, not shown): '))
    : undefined
  const result = initIdentity({
    home,
    ...(values.name === undefined ? {} : { name: values.name }),
    ...(ownerSecret === undefined ? {} : { ownerSecret }),
  })
  ownerSecret?.fill(0)
  const grant = await issueOwnDeviceGrant()
  const ownerNpub = result.ownerPubkey === undefined ? undefined : npub(result.ownerPubkey)
  if (values.json) {
    out.json({
      home: result.home,
      name: result.name,
      owner: ownerNpub ?? null,
      ownerKeyHere: result.ownerKeyHere,
      device: npub(result.devicePubkey),
      fleet: result.fleet === undefined ? null : npub(result.fleet),
      created: result.created,
      deviceGrant: grant?.event.id ?? null,
      hubs: grant?.reports ?? [],
    })
    return 0
  }
  const state = (created: boolean) => (created ? 'created' : 'exists, kept')
  out.line(`KITH_HOME  ${result.home}`)
  out.line(`name       ${result.name}`)
  if (ownerNpub !== undefined) {
    const where = result.ownerKeyHere ? state(result.created.owner) : 'held on another machine'
    out.line(`owner      ${ownerNpub}  (${where})`)
  } else {
    out.line('owner      none yet: join a fleet with kith join CODE')
  }
  out.line(`device     ${npub(result.devicePubkey)}  (${state(result.created.device)})`)
  if (grant !== undefined) {
    out.line(`grant      device granted by the owner (${grant.event.id.slice(0, 12)}…)`)
    for (const l of describeReports(grant.reports)) out.line(`           ${l}`)
  }
  if (!result.created.owner && !result.created.device && grant === undefined) {
    out.line('Nothing to do: this machine is already initialised.')
  }
  return 0
}

/** What the command index loads. */
export { initCommand as command, runInit as run }
