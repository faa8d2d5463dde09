import { KithError } from '../../errors.js'
import { resolveKithHome } from '../../identity/home.js'
import { initIdentity } from '../../identity/keys.js'
import { declare } from '../declare.js'
import type { Out } from '../io.js'
import { npub, parseSecretText } from '../key-text.js'
import { loadIdentity } from '../../identity/keys.js'
import { describeReports, ensureOwnDeviceGrant, syncHubs } from '../../node/fleet.js'
import { openLocalFleet, withStore } from '../local-node.js'
import { makeFleetSetting } from '../../events/e2e-setting.js'
import { signEvent } from '../../events/event.js'

/**
 * A fleet founded here is sealed from its first message (kith-e2e/1, "Turning it on"): the
 * founder signs "encrypt on" before anything else is sent; with --plain, an explicit "off" (a
 * founder's node signs "on" for a fleet it finds with no setting at all). Only for an owner key
 * made here: an imported one may already lead a fleet whose setting lives on its hubs, and this
 * must not overrule it (its node decides once it has caught up).
 */
function signFleetSetting(
  home: string,
  fleet: string,
  owner: Uint8Array,
  on: boolean,
  now: number,
): string {
  const setting = signEvent(makeFleetSetting(fleet, on, now), owner)
  withStore(home, (store) => store.enqueue(setting, now))
  return setting.id
}

/**
 * With the owner key here: the device's grant and, when this run founded the fleet, its sealing
 * setting (`seal`: on or off), both kept in the outbox; the grant goes to the hubs at once (the
 * setting with it).
 */
async function issueOwnerEvents(seal: boolean | undefined) {
  const id = loadIdentity(resolveKithHome())
  if (id.config.fleet === undefined) return undefined
  const now = Math.floor(Date.now() / 1000)
  const setting =
    seal !== undefined && id.ownerSecret !== undefined
      ? signFleetSetting(id.home, id.config.fleet, id.ownerSecret, seal, now)
      : undefined
  const sealed = seal === true ? setting : undefined
  const node = openLocalFleet(id)
  try {
    const event = ensureOwnDeviceGrant(node, now)
    if (event === undefined) return setting === undefined ? undefined : { sealed, reports: [] }
    return { event, sealed, reports: await syncHubs(node, now) }
  } finally {
    node.book.close()
  }
}

export const initCommand = declare({
  name: 'init',
  summary: "create this machine's device key (and, on your first machine, your owner key)",
  usage: ['kith init [--name NAME] [--owner-key-stdin] [--plain] [--json]'],
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
    plain: {
      type: 'boolean',
      description:
        'found a fleet whose hubs can read its messages (no end-to-end encryption until kith fleet encrypt on)',
    },
    json: { type: 'boolean', description: 'print the result as JSON' },
  },
  about: `Creates this machine's identity in KITH_HOME (default ~/.kith):
  - a device key, made here and never exported;
  - on a person's first machine, an owner key (the person's identity).
A fleet founded here is end-to-end encrypted from its first message: hubs and relays carry
only ciphertext (kith-e2e/1). --plain founds it unencrypted (it signs "encrypt off"). With
--owner-key-stdin the fleet may already exist, so its setting is left as its hubs have it; once
this machine's node (kith up) has caught up with its hubs and found no setting at all, it signs
"encrypt on" (kith fleet encrypt off to undo).
Running it again never overwrites a key: it says what already exists.`,
})

export async function runInit(argv: string[], out: Out): Promise<number> {
  const parsed = initCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values } = parsed
  const home = resolveKithHome()
  if (values.plain && values['owner-key-stdin'])
    throw new KithError(
      'usage',
      '--plain founds a new fleet; with --owner-key-stdin the fleet may exist already (use kith fleet encrypt off)',
    )
  const ownerSecret = values['owner-key-stdin']
    ? parseSecretText(await out.secret('owner secret (nsec or hex, not shown): '))
    : undefined
  const result = initIdentity({
    home,
    ...(values.name === undefined ? {} : { name: values.name }),
    ...(ownerSecret === undefined ? {} : { ownerSecret }),
  })
  ownerSecret?.fill(0)
  const founded = result.created.owner && ownerSecret === undefined
  if (values.plain && !founded)
    throw new KithError(
      'usage',
      '--plain applies only when kith init founds a fleet, and this machine is already initialised (use kith fleet encrypt off)',
    )
  const grant = await issueOwnerEvents(founded ? values.plain !== true : undefined)
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
      deviceGrant: grant?.event?.id ?? null,
      // Set only when this run founded the fleet; otherwise the fleet's hubs hold the setting.
      encrypt: founded ? grant?.sealed !== undefined : null,
      encryptSetting: grant?.sealed ?? null,
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
  if (grant?.event !== undefined) {
    out.line(`grant      device granted by the owner (${grant.event.id.slice(0, 12)}…)`)
    for (const l of describeReports(grant.reports)) out.line(`           ${l}`)
  }
  if (grant?.sealed !== undefined)
    out.line(
      'encrypt    on: hubs and relays carry only ciphertext (kith fleet encrypt off to stop)',
    )
  else if (founded) out.line('encrypt    off (--plain): turn it on with kith fleet encrypt on')
  if (!result.created.owner && !result.created.device && grant === undefined) {
    out.line('Nothing to do: this machine is already initialised.')
  }
  return 0
}

/** What the command index loads. */
export { initCommand as command, runInit as run }
