import { hostname } from 'node:os'
import { KithError } from '../../errors.js'
import { normalizeRelayUrl } from '../../events/nip42.js'
import { readConfig, writeConfig } from '../../identity/config.js'
import { resolveKithHome } from '../../identity/home.js'
import { prepareJoiningDevice } from '../../identity/keys.js'
import { GrantBook } from '../../node/grant-book.js'
import { PairingChannel } from '../../pairing/channel.js'
import { decodePairingCode } from '../../pairing/protocol/code.js'
import { PairError } from '../../pairing/protocol/errors.js'
import { JoinerSession } from '../../pairing/protocol/session.js'
import { parseCommandArgs } from '../args.js'
import type { Out } from '../io.js'
import { npub } from '../key-text.js'
import { askYesNo, closePrompt, readLine } from '../prompt.js'
import { formatSas } from './pair.js'

export const joinHelp = `Usage: kith join CODE [--name NAME] [--yes]
       kith join - [--name NAME]        (read the code from stdin)

Joins this machine to a fleet with a code from kith pair on the owner's machine. Works on a
machine with no keys yet: it makes this device's key (never an owner key), shows whose fleet
it joins and through which hub, and asks. Both screens then show the same 6 digits: compare
them, do not type them anywhere, and answer y on both sides. On success this machine has a
device grant from the owner and the fleet's hubs; start it with kith up.

Options:
  --name NAME   this machine's name in the fleet (default: the hostname)
  --yes         do not ask before contacting the hub (the 6 digits are always asked)`

export async function runJoin(argv: string[], out: Out): Promise<number> {
  const { values, positionals } = parseCommandArgs(
    argv,
    { name: { type: 'string' }, yes: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    joinHelp,
  )
  if (values.help) {
    out.line(joinHelp)
    return 0
  }
  if (positionals.length !== 1)
    throw new KithError('usage', `kith join takes one CODE (or -)\n\n${joinHelp}`)
  const now = () => Math.floor(Date.now() / 1000)
  let channel: PairingChannel | undefined
  try {
    const text = positionals[0] === '-' ? ((await readLine()) ?? '') : positionals[0]!
    const code = decodePairingCode(text)
    const hub = normalizeRelayUrl(code.hub)
    const home = resolveKithHome()
    const session = new JoinerSession(code, { now: now() })
    out.err(`Join the fleet of ${code.name} (${npub(code.owner)})`)
    out.err(`via the hub ${hub}, as a ${code.role}?`)
    if (!values.yes && !(await askYesNo('Continue?'))) throw new PairError('declined')
    const device = prepareJoiningDevice(home)
    const name = values.name ?? readConfig(home)?.name ?? hostname()
    channel = await PairingChannel.open(hub, code.pid)
    await channel.send(session.start())
    const untilExpiry = () => Math.max(1, (code.exp - now()) * 1000)
    const reveal = session.handle(await channel.next(untilExpiry()), now())
    if (reveal) await channel.send(reveal)
    out.err(
      `\nCompare with the other screen; do not type it anywhere:\n\n    ${formatSas(session.sas!)}\n`,
    )
    if (!(await askYesNo('Does the other screen show the same 6 digits?')))
      throw new PairError('declined')
    await channel.send(session.confirm({ pubkey: device.pubkey, secret: device.secret, name }))
    const { enrollment, ack } = session.accept(await channel.next(120_000), device.pubkey)
    device.secret.fill(0)
    const book = GrantBook.open(home, enrollment.fleet)
    try {
      book.learn([...enrollment.chain, enrollment.grant, ...enrollment.revocations])
    } finally {
      book.close()
    }
    const hubs = [...new Set([hub, ...enrollment.hubs.map(normalizeRelayUrl)])]
    writeConfig(home, { version: 1, name, owner: code.owner, fleet: enrollment.fleet, hubs })
    await channel.send(ack)
    out.line(`joined the fleet of ${code.name} as ${name} (${npub(device.pubkey)})`)
    out.line(`hubs: ${hubs.join(', ')}`)
    out.line('start this node with: kith up')
    return 0
  } catch (err) {
    if (!(err instanceof PairError)) throw err
    await channel?.abort(err.code)
    throw new KithError('restricted', err.message)
  } finally {
    channel?.close()
    closePrompt()
  }
}
