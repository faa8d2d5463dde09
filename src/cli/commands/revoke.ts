import { KithError } from '../../errors.js'
import { parseCommandArgs } from '../args.js'
import type { Out } from '../io.js'
import { parsePubkeyText } from '../key-text.js'
import { describeKey, revokeKey, withNode } from './fleet-common.js'

export const revokeHelp = `Usage: kith revoke NPUB [--json]

Revokes any key below you in the fleet (a device, an agent, or an owner you admitted), with
everything beneath it. Signed by the owner key when it is on this machine, otherwise by this
device (which may revoke the agents it granted). Takes effect on every hub at once and is never
undone: restore access with a new grant.`

export async function runRevoke(argv: string[], out: Out): Promise<number> {
  const { values, positionals } = parseCommandArgs(
    argv,
    { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    revokeHelp,
  )
  if (values.help) {
    out.line(revokeHelp)
    return 0
  }
  if (positionals.length !== 1)
    throw new KithError('usage', `kith revoke takes one NPUB\n\n${revokeHelp}`)
  const pubkey = parsePubkeyText(positionals[0]!, 'the key to revoke')
  return withNode((node) =>
    revokeKey(node, pubkey, describeKey(node, pubkey), out, values.json ?? false),
  )
}
