import { KithError } from '../../errors.js'
import { normalizeRelayUrl } from '../../events/nip42.js'
import { CliPairingLane } from '../../pairing/cli-lane.js'
import { decodePairingCode, type PairingCode, type PairRole } from '../../pairing/protocol/code.js'
import { PairError } from '../../pairing/protocol/errors.js'
import { PairingRun, pending } from '../../pairing/run.js'
import {
  JoinerHandshake,
  type Enrollment,
  type PairMessage,
} from '../../pairing/protocol/handshake.js'
import type { Out } from '../io.js'
import { npub } from '../key-text.js'
import { askYesNo, closePrompt, discardTypedAhead, readLine } from '../prompt.js'
import { asPairError, formatSas } from './invite-flow.js'

export interface JoinSpec {
  /** The code as typed, or `-` to read it from stdin. */
  text: string
  role: PairRole
  /** Kept for scripts; there is no question before the 6 digits any more, which are always asked. */
  yes: boolean
  /** Checks this machine can take the invitation, before anything is sent. */
  check: (code: PairingCode) => void
  /** The key whose possession is proven to the inviter, and the name it proposes. */
  key: () => { pubkey: string; secret: Uint8Array; name: string }
  /** Stores what was received; runs once the acknowledgement is sent. */
  enroll: (code: PairingCode, enrollment: Enrollment, hubs: string[]) => void
}

/**
 * The joiner's side of kith-pair/1, shared by `kith join` (a device key) and `kith fleet join`
 * (a person's owner key): decode, say what it joins, exchange, show the 6 digits, ask once, prove the key, accept
 * the grant, acknowledge it, and only then store it. If the other side stops (its person says
 * no, Ctrl-C, a hub refusal) this side says so at once, with the other side's reason.
 */
export async function runJoinExchange(
  spec: JoinSpec,
  out: Out,
): Promise<{ code: PairingCode; hubs: string[]; enrollment: Enrollment }> {
  const now = () => Math.floor(Date.now() / 1000)
  let channel: CliPairingLane | undefined
  let handshake: JoinerHandshake | undefined
  const run = new PairingRun()
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
    const s = new JoinerHandshake(code, { now: now() })
    handshake = s
    // One question, after the digits: it says what is joined, so a person answers y once.
    out.err(`Join the fleet of ${code.name} (${npub(code.owner)})`)
    out.err(
      `via the hub ${hub}, as a ${code.role === 'owner' ? 'member (owner)' : 'device'}? (contacting the hub for the 6 digits)`,
    )
    const key = spec.key()
    const ch = await CliPairingLane.open(hub, code.pid)
    channel = ch
    const sasReady = pending()
    const enrolled = pending<{ enrollment: Enrollment; ack: PairMessage }>()
    ch.listen(
      (m) => {
        try {
          if (m.t === 'confirm-i' || m.t === 'part') {
            const done = s.accept(m, key.pubkey, now())
            if (done) enrolled.resolve(done)
            return
          }
          const reply = s.handle(m, now())
          if (reply) ch.send(reply).catch((err: unknown) => run.stop(asPairError(err)))
          if (m.t === 'nonce') sasReady.resolve()
        } catch (err) {
          run.stop(asPairError(err))
        }
      },
      (err) => run.stop(err),
    )
    const untilExpiry = () => Math.max(1, (code.exp - now()) * 1000)
    return await run.withSignals(
      (err) => ch.interrupt(err),
      async () => {
        await run.until(ch.send(s.start()))
        await run.until(sasReady.promise, untilExpiry(), 'expired')
        out.err(
          `\nCompare with the other screen; do not type it anywhere:\n\n    ${formatSas(s.sas!)}\n`,
        )
        // An answer typed before the digits were shown is not an answer to them.
        discardTypedAhead()
        const yes = await run.until(
          askYesNo(
            `Does the other screen show the same 6 digits? y joins the fleet of ${code.name}`,
          ),
          untilExpiry(),
          'expired',
        )
        if (!yes) throw new PairError('declined')
        await run.until(ch.send(s.confirm(key)))
        out.err("waiting for the other side's answer…")
        const { enrollment, ack } = await run.until(enrolled.promise, untilExpiry(), 'expired')
        // The acknowledgement first: the inviter records the grant only once it has it, and
        // this side stores nothing until the hub has taken it.
        await run.until(ch.send(ack))
        const hubs = [...new Set([hub, ...enrollment.hubs.flatMap(validHub)])]
        spec.enroll(code, enrollment, hubs)
        return { code, hubs, enrollment }
      },
    )
  } catch (err) {
    const failure = err instanceof PairError ? err : run.error
    if (channel && handshake && !(failure?.remote ?? false)) {
      await channel.abort(
        failure
          ? handshake.abort(failure.reason, failure.detail)
          : handshake.abort('aborted', err instanceof Error ? err.message : String(err)),
      )
    }
    if (!(err instanceof PairError)) throw err
    throw new KithError('restricted', err.message)
  } finally {
    channel?.close()
    closePrompt()
  }
}

/** A hub URL from the enrollment, normalised; one that does not parse is left out. */
function validHub(url: string): string[] {
  try {
    return [normalizeRelayUrl(url)]
  } catch (err) {
    // The inviter's list is advice; a bad entry must not cost the whole enrollment.
    if (!(err instanceof KithError)) throw err
    return []
  }
}
