import { KithError } from '../../errors.js'
import { defaultEmbeddedPort } from '../../node/daemon.js'
import { parseCommandArgs } from '../args.js'
import type { Out } from '../io.js'
import { npub } from '../key-text.js'
import { runInvite } from './invite-flow.js'

export { formatSas } from './invite-flow.js'
export const pairHelp = `Usage: kith pair [--name NAME] [--hub URL] [--rearm]

Enrolls a new machine into this fleet (run it where the owner key is). Prints a QR code and the
same code as text (paste it over SSH); on the new machine run: kith join CODE. Both screens then
show the same 6 digits: compare them, do not type them anywhere, and answer y on both sides.
The new machine gets its own device key and a grant signed here; no secret key is sent.

The hub used is the first configured one, or else the hub embedded in this machine's running
kith up (by default 127.0.0.1:${defaultEmbeddedPort}).

Options:
  --name NAME   the new device's name, shown on both screens and taken by it (default: the name
                it proposes, its hostname); it can rename itself later (kith device rename)
  --hub URL     the hub URL the new machine should use, when it reaches the hub by another address
                (an SSH tunnel, a tailnet name); this machine still uses its own
  --rearm       clear the lock set after 3 failed pairings in 15 minutes
  -h, --help    show this help`

export async function runPair(argv: string[], out: Out): Promise<number> {
  const { values, positionals } = parseCommandArgs(
    argv,
    {
      name: { type: 'string' },
      hub: { type: 'string' },
      rearm: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    pairHelp,
  )
  if (values.help) {
    out.line(pairHelp)
    return 0
  }
  if (positionals.length > 0)
    throw new KithError('usage', `kith pair takes no arguments\n\n${pairHelp}`)
  return runInvite(
    {
      role: 'device',
      command: 'kith pair',
      joinCommand: 'kith join',
      hub: values.hub,
      rearm: values.rearm === true,
      name: values.name,
      check: () => undefined,
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
