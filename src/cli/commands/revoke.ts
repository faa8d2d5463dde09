import { declare } from '../declare.js'
import type { Out } from '../io.js'
import { parsePubkeyText } from '../key-text.js'
import { describeKey, revokeKey, withNode } from './fleet-common.js'
import { resignAuthorityOf } from './resign.js'

export const revokeCommand = declare({
  name: 'revoke',
  summary: 'revoke any key below you, with everything beneath it',
  usage: ['kith revoke NPUB [--json] [--yes]'],
  arity: { min: 1, max: 1, error: 'kith revoke takes one NPUB' },
  options: {
    json: { type: 'boolean', description: 'print the result as JSON' },
    yes: {
      type: 'boolean',
      description: 'do not ask for confirmation (needed when stdin is not a terminal)',
    },
  },
  about: `Revokes any key below you in the fleet (a device, an agent, or an owner you admitted), with
everything beneath it. Signed by the owner key when it is on this machine, otherwise by this
device (which may revoke the agents it granted). Takes effect on every hub at once and is never
undone: restore access with a new grant. It asks first on a terminal; from a script it needs --yes.`,
})

export async function runRevoke(argv: string[], out: Out): Promise<number> {
  const parsed = revokeCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values, positionals } = parsed
  const pubkey = parsePubkeyText(positionals[0]!, 'the key to revoke')
  return withNode((node) => {
    // A person (an owner key) takes their authority with them: what it held is re-signed, as
    // kith fleet remove does, so nothing they back-date can change it.
    const person = node.book.verifier.grantsOf(pubkey).some((e) => e.grant.role === 'owner')
    return revokeKey(
      node,
      pubkey,
      describeKey(node, pubkey),
      out,
      { json: values.json === true, yes: values.yes === true },
      person && node.id.ownerSecret !== undefined
        ? (revokedAt) => resignAuthorityOf(node, pubkey, revokedAt, out)
        : undefined,
    )
  })
}

/** What the command index loads. */
export { revokeCommand as command, runRevoke as run }
