import { KithError } from '../../errors.js'
import { normalizeRelayUrl } from '../../events/nip42.js'
import { PairingChannel } from '../../pairing/channel.js'
import { decodePairingCode, type PairingCode, type PairRole } from '../../pairing/protocol/code.js'
import { PairError } from '../../pairing/protocol/errors.js'
import { JoinerSession, type Enrollment } from '../../pairing/protocol/session.js'
import type { Out } from '../io.js'
import { npub } from '../key-text.js'
import { askYesNo, closePrompt, readLine } from '../prompt.js'
import { formatSas } from './invite-flow.js'

export interface JoinSpec {
  /** The code as typed, or `-` to read it from stdin. */
  text: string
  role: PairRole
  /** Skip the question before contacting the hub (the 6 digits are always asked). */
  yes: boolean
  /** Checks this machine can take the invitation, before anything is sent. */
  check: (code: PairingCode) => void
  /** The key whose possession is proven to the inviter, and the name it proposes. */
  key: () => { pubkey: string; secret: Uint8Array; name: string }
  /** Stores what was received; runs before the acknowledgement is sent. */
  enroll: (code: PairingCode, enrollment: Enrollment, hubs: string[]) => void
}

/**
 * The joiner's side of kith-pair/1, shared by `kith join` (a device key) and `kith fleet join`
 * (a person's owner key): decode, ask, exchange, show the 6 digits, ask, prove the key, accept
 * the grant and acknowledge.
 */
export async function runJoinExchange(
  spec: JoinSpec,
  out: Out,
): Promise<{ code: PairingCode; hubs: string[] }> {
  const now = () => Math.floor(Date.now() / 1000)
  let channel: PairingChannel | undefined
  try {
    const text = spec.text === '-' ? ((await readLine()) ?? '') : spec.text
    const code = decodePairingCode(text)
    if (code.role !== spec.role) {
      throw new KithError(
        'usage',
        code.role === 'owner'
          ? 'this code invites a person into a fleet: run kith fleet join CODE on their own machine'
          : 'this code enrolls a device: run kith join CODE on the new machine',
      )
    }
    spec.check(code)
    const hub = normalizeRelayUrl(code.hub)
    const session = new JoinerSession(code, { now: now() })
    out.err(`Join the fleet of ${code.name} (${npub(code.owner)})`)
    out.err(`via the hub ${hub}, as a ${code.role === 'owner' ? 'member (owner)' : 'device'}?`)
    if (!spec.yes && !(await askYesNo('Continue?'))) throw new PairError('declined')
    const key = spec.key()
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
    await channel.send(session.confirm(key))
    const { enrollment, ack } = session.accept(await channel.next(120_000), key.pubkey)
    const hubs = [...new Set([hub, ...enrollment.hubs.map(normalizeRelayUrl)])]
    spec.enroll(code, enrollment, hubs)
    await channel.send(ack)
    return { code, hubs }
  } catch (err) {
    if (!(err instanceof PairError)) throw err
    await channel?.abort(err.code)
    throw new KithError('restricted', err.message)
  } finally {
    channel?.close()
    closePrompt()
  }
}
