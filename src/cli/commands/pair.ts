import qrcode from 'qrcode-terminal'
import { KithError } from '../../errors.js'
import { Kind } from '../../events/kinds.js'
import { normalizeRelayUrl } from '../../events/nip42.js'
import { resolveKithHome } from '../../identity/home.js'
import { loadIdentity } from '../../identity/keys.js'
import { describeReports, openFleetNode, syncHubs } from '../../node/fleet.js'
import { PairingChannel } from '../../pairing/channel.js'
import { isLocked, rearm, recordFailure } from '../../pairing/lockout.js'
import { encodePairingCode } from '../../pairing/protocol/code.js'
import { PairError } from '../../pairing/protocol/errors.js'
import { InviterSession } from '../../pairing/protocol/session.js'
import { parseCommandArgs } from '../args.js'
import type { Out } from '../io.js'
import { npub } from '../key-text.js'
import { askYesNo, closePrompt } from '../prompt.js'
import { defaultEmbeddedPort } from '../../node/daemon.js'
import { connectDaemon } from './chat-common.js'
import { notifyDaemon } from './fleet-common.js'

export const pairHelp = `Usage: kith pair [--name NAME] [--hub URL] [--rearm]

Enrolls a new machine into this fleet (run it where the owner key is). Prints a QR code and the
same code as text (paste it over SSH); on the new machine run: kith join CODE. Both screens then
show the same 6 digits: compare them, do not type them anywhere, and answer y on both sides.
The new machine gets its own device key and a grant signed here; no secret key is sent.

The hub used is the first configured one, or else the hub embedded in this machine's running
kith up (by default 127.0.0.1:${defaultEmbeddedPort}).

Options:
  --name NAME   the new device's name (default: the name it proposes)
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
  const home = resolveKithHome()
  const id = loadIdentity(home)
  if (id.ownerSecret === undefined || id.ownerPubkey === undefined) {
    throw new KithError('restricted', 'kith pair runs on the machine that holds the owner key')
  }
  const now = () => Math.floor(Date.now() / 1000)
  if (values.rearm) {
    rearm(home)
    out.line('pairing re-armed')
    return 0
  }
  if (isLocked(home, now())) throw new KithError('restricted', new PairError('locked').message)
  const connectUrl =
    id.config.hubs[0] ?? (await embeddedHubUrl()) ?? `ws://127.0.0.1:${defaultEmbeddedPort}`
  const codeHub = normalizeRelayUrl(values.hub ?? connectUrl)
  const node = openFleetNode(id)
  const session = new InviterSession(
    { hub: codeHub, owner: id.ownerPubkey, name: id.config.name, role: 'device' },
    { now: now() },
  )
  let channel: PairingChannel | undefined
  try {
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
    out.err(`On the new machine run:\n\n  kith join ${text}\n`)
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
    const grant = node.book.issueGrant(
      { subject: proof.device, role: 'device', deleg: true, name: values.name ?? proof.name },
      id.ownerSecret,
      now(),
    )
    const ownerGrant =
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
        chain: ownerGrant,
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
          `note: no acknowledgement from the new device (${String(err)}); its grant is published`,
        ),
    )
    out.line(
      `paired: ${values.name ?? proof.name} ${npub(proof.device)} is now a device of this fleet`,
    )
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
