import { KithError } from '../../errors.js'
import { fleetPeople } from '../../grants/members.js'
import { defaultEmbeddedPort } from '../../node/kith-node.js'
import { declare } from '../declare.js'
import { withLocalNode } from '../local-node.js'
import type { Out } from '../io.js'
import { npub } from '../key-text.js'
import { runInvite } from './invite-flow.js'

export { formatSas } from './invite-flow.js'
export const pairCommand = declare({
  name: 'pair',
  summary: 'enroll a new machine: shows a QR/code and a 6-digit check',
  usage: ['kith pair [--name NAME] [--hub URL] [--rearm]'],
  arity: { min: 0, max: 0, error: 'kith pair takes no arguments' },
  options: {
    name: {
      type: 'string',
      value: 'NAME',
      description:
        "the new device's name, shown on both screens and taken by it (default: the name it proposes, its hostname); it can rename itself later (kith device rename)",
    },
    hub: {
      type: 'string',
      value: 'URL',
      description:
        'the hub URL the new machine should use, when it reaches the hub by another address (an SSH tunnel, a tailnet name); this machine still uses its own',
    },
    rearm: {
      type: 'boolean',
      description: 'clear the lock set after 3 failed pairings in 15 minutes',
    },
  },
  about: `Enrolls a new machine into this fleet (run it where the owner key is). Prints a QR code and the
same code as text (paste it over SSH); on the new machine run: kith join CODE. Both screens then
show the same 6 digits: compare them, do not type them anywhere, and answer y on both sides.
The new machine gets its own device key and a grant signed here; no secret key is sent.

The hub used is the first configured one, or else the hub embedded in this machine's running
kith up (by default 127.0.0.1:${defaultEmbeddedPort}).`,
})

export async function runPair(argv: string[], out: Out): Promise<number> {
  const parsed = pairCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values } = parsed
  return runInvite(
    {
      role: 'device',
      command: 'kith pair',
      joinCommand: 'kith join',
      hub: values.hub,
      rearm: values.rearm === true,
      name: values.name,
      // Two active devices of one person with one name: `kith device revoke NAME` and @NAME
      // could no longer say which (the walk-through paired a second "phone" without a word).
      check: (node, now) => {
        const name = values.name
        if (name === undefined) return
        const me = node.id.ownerPubkey ?? node.fleet
        const person = fleetPeople(node.book.verifier, now).find((p) => p.pubkey === me)
        // By the name each device goes by now (a device renames itself), as device list shows.
        const same = withLocalNode(({ names }) =>
          person?.devices.find((d) => d.status === 'active' && names.who(d.pubkey).name === name),
        )
        if (same !== undefined)
          throw new KithError(
            'usage',
            `you already have a device named ${name} (${npub(same.pubkey)}): pair this one under another --name, or revoke that one first (kith device revoke ${npub(same.pubkey)})`,
          )
      },
      grant: (node, proof, name, ownerSecret, now) =>
        node.book.signGrant(
          { subject: proof.device, role: 'device', deleg: true, name, proof: proof.consent },
          ownerSecret,
          now,
        ),
      done: (proof, name) => `paired: ${name} ${npub(proof.device)} is now a device of this fleet`,
    },
    out,
  )
}

/** What the command index loads. */
export { pairCommand as command, runPair as run }
