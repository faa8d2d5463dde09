import qrcode from 'qrcode-terminal'
import { KithError } from '../../errors.js'
import type { NostrEvent } from '../../events/event.js'
import { Kind } from '../../events/kinds.js'
import { normalizeRelayUrl } from '../../events/nip42.js'
import { resolveKithHome } from '../../identity/home.js'
import { loadIdentity } from '../../identity/keys.js'
import { describeReports, openFleetNode, syncHubs, type FleetNode } from '../../node/fleet.js'
import { defaultEmbeddedPort } from '../../node/daemon.js'
import { PairingChannel } from '../../pairing/channel.js'
import { isLocked, rearm, recordFailure } from '../../pairing/lockout.js'
import { encodePairingCode, type PairRole } from '../../pairing/protocol/code.js'
import { PairError } from '../../pairing/protocol/errors.js'
import { InviterSession, type JoinerProof } from '../../pairing/protocol/session.js'
import type { Out } from '../io.js'
import { askYesNo, closePrompt } from '../prompt.js'
import { connectDaemon } from './chat-common.js'
import { notifyDaemon } from './fleet-common.js'

export interface InviteSpec {
  role: PairRole
  /** This command, for messages: `kith pair` or `kith fleet invite`. */
  command: string
  /** The command the other side runs with the code, e.g. `kith join`. */
  joinCommand: string
  /** --hub: the URL the other machine should use, when it differs from this machine's. */
  hub: string | undefined
  rearm: boolean
  /** Refuses before a code is shown when this machine may not make this invitation. */
  check: (node: FleetNode, now: number) => void
  /** Signs the grant for the key the other side proved it holds. */
  grant: (node: FleetNode, proof: JoinerProof, ownerSecret: Uint8Array, now: number) => NostrEvent
  /** The line printed on success. */
  done: (proof: JoinerProof) => string
}

/**
 * The inviter's side of kith-pair/1, shared by `kith pair` (role device) and `kith fleet invite`
 * (role owner): show the code, wait for the other side, show the 6 digits, ask, then sign the
 * grant, hand over the chain and hubs, and publish.
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
  const now = () => Math.floor(Date.now() / 1000)
  if (spec.rearm) {
    rearm(home)
    out.line('pairing re-armed')
    return 0
  }
  if (isLocked(home, now())) throw new KithError('restricted', new PairError('locked').message)
  const node = openFleetNode(id)
  let channel: PairingChannel | undefined
  try {
    spec.check(node, now())
    const connectUrl =
      id.config.hubs[0] ?? (await embeddedHubUrl()) ?? `ws://127.0.0.1:${defaultEmbeddedPort}`
    const codeHub = normalizeRelayUrl(spec.hub ?? connectUrl)
    const session = new InviterSession(
      { hub: codeHub, owner: id.ownerPubkey, name: id.config.name, role: spec.role },
      { now: now() },
    )
    try {
      channel = await PairingChannel.open(connectUrl, session.code.pid)
    } catch (err) {
      throw new KithError(
        'io',
        `${err instanceof Error ? err.message : String(err)}: start kith up here (it embeds a hub), or kith hub add URL`,
      )
    }
    const text = encodePairingCode(session.code)
    qrcode.generate(text, { small: true }, (qr: string) => out.err(qr))
    out.err(`On the ${spec.role === 'owner' ? "other person's" : 'new'} machine run:\n`)
    out.err(`  ${spec.joinCommand} ${text}\n`)
    out.err(`hub: ${codeHub}${codeHub !== connectUrl ? ` (this machine uses ${connectUrl})` : ''}`)
    out.err(
      `the code expires at ${new Date(session.code.exp * 1000).toLocaleTimeString()} (5 minutes); waiting…`,
    )
    const untilExpiry = () => Math.max(1, (session.code.exp - now()) * 1000)
    const reply = session.handle(await channel.next(untilExpiry()), now())
    if (reply) await channel.send(reply)
    const reveal = await channel.next(untilExpiry())
    session.handle(reveal, now())
    out.err(
      `\nCompare with the other screen; do not type it anywhere:\n\n    ${formatSas(session.sas!)}\n`,
    )
    // The person's answer and the joiner's confirmation may come in either order.
    const confirmR = channel.next(120_000)
    // Awaited after the person answers; until then a failure must not count as unhandled.
    confirmR.catch(() => undefined)
    const yes = await askYesNo('Does the other screen show the same 6 digits?')
    if (!yes) throw new PairError('declined')
    session.handle(await confirmR, now())
    const proof = session.proof!
    const grant = spec.grant(node, proof, ownerSecret, now())
    const ownerChain =
      id.ownerPubkey === node.fleet ? [] : node.book.chainEvents(id.ownerPubkey, now())
    const hubs = [
      ...new Set([
        codeHub,
        ...id.config.hubs.filter((h) => !/\/\/(127\.|localhost|\[::1\])/.test(h)),
      ]),
    ]
    await channel.send(
      session.finish({
        grant,
        chain: ownerChain,
        fleet: node.fleet,
        hubs,
        revocations: node.book.allEvents().filter((e) => e.kind === Kind.Revocation),
      }),
    )
    const reports = await syncHubs(node, now(), undefined, [
      ...new Set([connectUrl, ...id.config.hubs]),
    ])
    await channel.next(30_000).then(
      (ack) => session.handle(ack, now()),
      (err: unknown) =>
        out.err(
          `note: no acknowledgement from the other side (${String(err)}); its grant is published`,
        ),
    )
    out.line(spec.done(proof))
    for (const l of describeReports(reports)) out.line(`  ${l}`)
    return 0
  } catch (err) {
    if (!(err instanceof PairError)) throw err
    recordFailure(home, now())
    await channel?.abort(err.code)
    throw new KithError('restricted', err.message)
  } finally {
    channel?.close()
    node.book.close()
    closePrompt()
    await notifyDaemon()
  }
}

/** With no hub configured, the hub embedded in this machine's running node (kith up), if any. */
async function embeddedHubUrl(): Promise<string | undefined> {
  const daemon = await connectDaemon()
  if (daemon === undefined) return undefined
  try {
    return (await daemon.request<{ embeddedHub: string | null }>('status')).embeddedHub ?? undefined
  } finally {
    daemon.close()
  }
}

export function formatSas(sas: string): string {
  return sas.length === 6 ? `${sas.slice(0, 3)} ${sas.slice(3)}` : sas
}
