import qrcode from 'qrcode-terminal'
import { KithError } from '../../errors.js'
import type { NostrEvent } from '../../events/event.js'
import { normalizeRelayUrl } from '../../events/nip42.js'
import { resolveKithHome } from '../../identity/home.js'
import { loadIdentity } from '../../identity/keys.js'
import { describeReports, syncHubs, type FleetNode } from '../../node/fleet.js'
import { defaultEmbeddedPort } from '../../node/kith-node.js'
import { CliPairingLane } from '../../pairing/cli-lane.js'
import { isLocked, rearm, recordFailure } from '../../pairing/lockout.js'
import { PairingRun, pending } from '../../pairing/run.js'
import { encodePairingCode, type PairRole } from '../../pairing/protocol/code.js'
import { PairError } from '../../pairing/protocol/errors.js'
import { InviterHandshake, type JoinerProof } from '../../pairing/protocol/handshake.js'
import type { Out } from '../io.js'
import { askYesNo, closePrompt } from '../prompt.js'
import { notifyDaemon } from './fleet-common.js'
import { connectNode } from '../control-client.js'
import { openLocalFleet, withStore } from '../local-node.js'
import { fleetSealingHere } from '../../node/e2e-keys.js'

export interface InviteSpec {
  role: PairRole
  /** This command, for messages: `kith pair` or `kith fleet invite`. */
  command: string
  /** The command the other side runs with the code, e.g. `kith join`. */
  joinCommand: string
  /** --hub: the URL the other machine should use, when it differs from this machine's. */
  hub: string | undefined
  rearm: boolean
  /** --name: the name this side gives the new key (else the name the other side proposes). */
  name: string | undefined
  /** Refuses before a code is shown when this machine may not make this invitation. */
  check: (node: FleetNode, now: number) => void
  /**
   * Signs (never stores) the grant for the key the other side proved it holds, named `name`;
   * it is recorded only once the other side has acknowledged it.
   */
  grant: (
    node: FleetNode,
    proof: JoinerProof,
    name: string,
    ownerSecret: Uint8Array,
    now: number,
  ) => NostrEvent
  /** The line printed on success. */
  done: (proof: JoinerProof, name: string) => string
}

/** How long the other side has to acknowledge its grant once it is sent (it answers at once). */
const ackTimeoutMs = 15_000

/**
 * The inviter's side of kith-pair/1, shared by `kith pair` (role device) and `kith fleet invite`
 * (role owner): show the code, wait for the other side, show the 6 digits, ask, then sign the
 * grant, hand it over with the chain above it and the hubs, and — only once the other side has
 * acknowledged it — record and publish it. Any failure leaves no grant behind, is shown with its
 * real reason on both screens, and counts toward the lockout only when it is a security failure.
 */
export async function runInvite(spec: InviteSpec, out: Out): Promise<number> {
  const home = resolveKithHome()
  const id = loadIdentity(home)
  if (id.ownerSecret === undefined || id.ownerPubkey === undefined) {
    throw new KithError(
      'restricted',
      `${spec.command} runs on the machine that holds the owner key`,
    )
  }
  const ownerSecret = id.ownerSecret
  const ownerPubkey = id.ownerPubkey
  const now = () => Math.floor(Date.now() / 1000)
  if (spec.rearm) {
    rearm(home)
    out.line('pairing re-armed')
    return 0
  }
  if (isLocked(home, now())) throw new KithError('restricted', new PairError('locked').message)
  const node = openLocalFleet(id)
  let channel: CliPairingLane | undefined
  let handshake: InviterHandshake | undefined
  const run = new PairingRun()
  try {
    spec.check(node, now())
    const connectUrl =
      id.config.hubs[0] ?? (await embeddedHubUrl()) ?? `ws://127.0.0.1:${defaultEmbeddedPort}`
    const codeHub = normalizeRelayUrl(spec.hub ?? connectUrl)
    const s = new InviterHandshake(
      {
        hub: codeHub,
        owner: ownerPubkey,
        name: id.config.fleetName ?? id.config.name,
        role: spec.role,
      },
      { now: now() },
    )
    handshake = s
    try {
      channel = await CliPairingLane.open(connectUrl, s.code.pid)
    } catch (err) {
      throw new KithError(
        'io',
        `${err instanceof Error ? err.message : String(err)}: start kith up here (it embeds a hub), or kith hub add URL`,
      )
    }
    const ch = channel
    const sasReady = pending()
    const joinerConfirmed = pending()
    const acked = pending()
    ch.listen(
      (m) => {
        try {
          const reply = s.handle(m, now())
          if (reply) ch.send(reply).catch((err: unknown) => run.stop(asPairError(err)))
          if (m.t === 'reveal') sasReady.resolve()
          else if (m.t === 'confirm-r') joinerConfirmed.resolve()
          else if (m.t === 'ack') acked.resolve()
        } catch (err) {
          run.stop(asPairError(err))
        }
      },
      (err) => run.stop(err),
    )
    const untilExpiry = () => Math.max(1, (s.code.exp - now()) * 1000)
    return await run.withSignals(
      (err) => ch.interrupt(err),
      async () => {
        const text = encodePairingCode(s.code)
        qrcode.generate(text, { small: true }, (qr: string) => out.err(qr))
        out.err(`On the ${spec.role === 'owner' ? "other person's" : 'new'} machine run:\n`)
        out.err(`  ${spec.joinCommand} ${text}\n`)
        if (id.config.fleetName !== undefined) out.err(`fleet: ${id.config.fleetName}`)
        out.err(
          `hub: ${codeHub}${codeHub !== connectUrl ? ` (this machine uses ${connectUrl})` : ''}`,
        )
        out.err(
          `the code is a secret until it expires at ${new Date(s.code.exp * 1000).toLocaleTimeString()} (5 minutes): show it only to that machine; waiting…`,
        )
        await run.until(sasReady.promise, untilExpiry(), 'expired')
        out.err(
          `\nCompare with the other screen; do not type it anywhere:\n\n    ${formatSas(s.sas!)}\n`,
        )
        const yes = await run.until(
          askYesNo('Does the other screen show the same 6 digits?'),
          untilExpiry(),
          'expired',
        )
        if (!yes) throw new PairError('declined')
        out.err("waiting for the other side's answer…")
        await run.until(joinerConfirmed.promise, untilExpiry(), 'expired')
        const proof = s.proof!
        const name = spec.name ?? proof.name
        const grant = spec.grant(node, proof, name, ownerSecret, now())
        const chain = ownerPubkey === node.fleet ? [] : node.book.chainEvents(ownerPubkey, now())
        const hubs = [
          ...new Set([
            codeHub,
            ...id.config.hubs.filter((h) => !/\/\/(127\.|localhost|\[::1\])/.test(h)),
          ]),
        ]
        const sealing = sealingEvidence(node, now())
        for (const m of s.finish({ grant, chain, fleet: node.fleet, hubs, sealing }))
          await run.until(ch.send(m))
        await run.until(acked.promise, ackTimeoutMs, 'unconfirmed')
        // Both yeses, both confirmations and the acknowledgement: only now is anything granted.
        node.book.record(grant, now())
        const reports = await syncHubs(node, now(), undefined, [
          ...new Set([connectUrl, ...id.config.hubs]),
        ])
        out.line(spec.done(proof, name))
        for (const l of describeReports(reports)) out.line(`  ${l}`)
        return 0
      },
    )
  } catch (err) {
    const failure = err instanceof PairError ? err : run.error
    // Tell the other side why (authenticated once the keys exist), unless it told us.
    if (channel && handshake && !(failure?.remote ?? false)) {
      await channel.abort(
        failure
          ? handshake.abort(failure.reason, failure.detail)
          : handshake.abort('aborted', err instanceof Error ? err.message : String(err)),
      )
    }
    if (!(err instanceof PairError)) throw err
    if (err.counts) recordFailure(home, now())
    throw new KithError('restricted', err.message)
  } finally {
    channel?.close()
    node.book.close()
    closePrompt()
    await notifyDaemon()
  }
}

/** A failure while messages are handled, as a stop: lane and protocol failures are PairErrors. */
export function asPairError(err: unknown): PairError {
  if (err instanceof PairError) return err
  return new PairError(
    'interrupted',
    `internal error: ${err instanceof Error ? err.message : String(err)}`,
  )
}

/** With no hub configured, the hub embedded in this machine's running node (kith up), if any. */
async function embeddedHubUrl(): Promise<string | undefined> {
  const daemon = await connectNode()
  if (daemon === undefined) return undefined
  try {
    return (await daemon.request('status')).embeddedHub ?? undefined
  } finally {
    daemon.close()
  }
}

export function formatSas(sas: string): string {
  return sas.length === 6 ? `${sas.slice(0, 3)} ${sas.slice(3)}` : sas
}

/**
 * The fleet's setting in effect, signed, with the grants above its author (kith-e2e/1, "New
 * devices"): the new device seals from its first message even if a hub withholds settings.
 */
function sealingEvidence(node: FleetNode, now: number): NostrEvent[] {
  const setting = withStore(node.id.home, (store) =>
    fleetSealingHere(store, node.book, node.fleet, now),
  ).decidedBy
  if (setting === undefined) return []
  const chain =
    setting.pubkey === node.fleet ? [] : node.book.chainEvents(setting.pubkey, setting.created_at)
  return [...chain, setting]
}
