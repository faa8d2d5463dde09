import { KithError } from '../errors.js'
import { verifyEventSignature, type NostrEvent } from '../events/event.js'
import { withConnectTicket } from '../events/connect-ticket.js'
import { Kind } from '../events/kinds.js'
import { chooseIssuer } from '../grants/issuer.js'
import type { Identity } from '../identity/keys.js'
import { HubCall } from '../link/hub-call.js'
import { saysDuplicate } from '../link/relay-client.js'
import { GrantBook } from './grant-book.js'

/** This node's identity together with its copy of the fleet's grants. */
export interface FleetNode {
  id: Identity
  fleet: string
  book: GrantBook
  /**
   * The hub embedded in this machine's running `kith up`, asked of it by whoever opened the node
   * (the CLI, through its control socket); absent or undefined: none.
   */
  embeddedHub?: () => Promise<string | undefined>
}

export function openFleetNode(id: Identity): FleetNode {
  const fleet = id.config.fleet
  if (fleet === undefined) {
    throw new KithError(
      'not-initialized',
      'this machine is not in a fleet yet; run kith init on your first machine, or kith join CODE',
    )
  }
  return { id, fleet, book: GrantBook.open(id.home, fleet) }
}

/**
 * On the machine that holds the owner key, the device is granted by the owner directly (with
 * deleg, so it can host agents). Issues that grant when the device has no valid one yet.
 */
export function ensureOwnDeviceGrant(node: FleetNode, now: number): NostrEvent | undefined {
  const { id, book } = node
  if (id.ownerSecret === undefined || id.ownerPubkey === undefined) return undefined
  if (book.authorize(id.devicePubkey, now).ok) return undefined
  const { parent, chained } = chooseIssuer({ owner: id.ownerPubkey }, node.fleet, (k) =>
    book.currentGrant(k, now),
  )
  if (!chained) return undefined
  return book.issueGrant(
    {
      subject: id.devicePubkey,
      role: 'device',
      deleg: true,
      name: id.config.name,
      subjectSecret: id.deviceSecret,
      ...(parent === undefined ? {} : { parent }),
    },
    id.ownerSecret,
    now,
  )
}

export interface HubReport {
  url: string
  ok: boolean
  error?: string
  /** Events this hub accepted now (new to it). */
  published: number
  /** Events it refused, with its reason. */
  refused: { id: string; kind: number; message: string }[]
  /** Grants and revocations learned from it. */
  learned: number
}

/**
 * Brings each configured hub and this node's grant book up to date with each other: publishes
 * this device's chain (before AUTH, so the hub can admit it), authenticates as the device, learns
 * the hub's grants and revocations, then publishes every grant and revocation this node holds
 * (the hub ignores duplicates). Hubs that cannot be reached are reported, never fatal: the
 * events stay in node.db and go out on the next sync.
 */
export async function syncHubs(
  node: FleetNode,
  now: number,
  progress: (line: string) => void = () => undefined,
  given?: readonly string[],
  /** Events of this node's own to publish once authenticated (a renamed device's profile). */
  extra: readonly NostrEvent[] = [],
): Promise<HubReport[]> {
  const hubs = given ?? (await hubsOf(node))
  const reports: HubReport[] = []
  for (const url of hubs) {
    const report: HubReport = { url, ok: false, published: 0, refused: [], learned: 0 }
    reports.push(report)
    progress(`syncing grants with ${url}`)
    let call: HubCall | undefined
    try {
      call = await HubCall.open(withConnectTicket(url, node.id.deviceSecret))
      const send = async (e: NostrEvent) => {
        const answer = await call!.publish(e)
        if (!answer.ok) report.refused.push({ id: e.id, kind: e.kind, message: answer.message })
        else if (!saysDuplicate(answer.message)) report.published++
      }
      for (const e of node.book.chainEvents(node.id.devicePubkey, now)) await send(e)
      const auth = await call.auth(node.id.deviceSecret)
      if (!auth.ok) throw new KithError('restricted', `hub refused this device: ${auth.message}`)
      report.learned = node.book.learn(
        await call.query({ kinds: [Kind.Grant, Kind.Revocation], limit: 5000 }),
      )
      // Keys name themselves in their kind-0 profiles (a device's own name wins over its
      // grant's): learn the fleet's, so lists show the names the chat shows.
      const subjects = node.book.verifier.subjects()
      // In slices a hub takes (kith-hub limits a filter to 1,000 values).
      for (let i = 0; i < subjects.length; i += 500) {
        const authors = subjects.slice(i, i + 500)
        const profiles = await call.query({ kinds: [Kind.Profile], authors })
        node.book.keep(
          profiles.filter(
            (e) => e.kind === Kind.Profile && authors.includes(e.pubkey) && verifyEventSignature(e),
          ),
        )
      }
      // Refusals before AUTH are retried below with the full set; report only the final ones.
      report.refused = []
      for (const e of [...node.book.allEvents(), ...extra]) await send(e)
      report.ok = true
    } catch (err) {
      report.error = err instanceof Error ? err.message : String(err)
    } finally {
      call?.close()
    }
  }
  return reports
}

/**
 * The hubs a command should sync with: the configured ones, or, when there are none, the hub
 * embedded in this machine's running `kith up` (where the change is applied at once).
 */
async function hubsOf(node: FleetNode): Promise<readonly string[]> {
  if (node.id.config.hubs.length > 0) return node.id.config.hubs
  const embedded = await node.embeddedHub?.()
  return embedded === undefined ? [] : [embedded]
}

/** One line per hub for humans. */
export function describeReports(reports: readonly HubReport[]): string[] {
  if (reports.length === 0) {
    return [
      'no hubs configured and no node running: kept in node.db; the next kith up applies and publishes it',
    ]
  }
  return reports.flatMap((r) => {
    if (!r.ok)
      return [
        `${r.url}: not reached (${r.error ?? 'unknown error'}); kept in node.db for the next sync`,
      ]
    const lines = [`${r.url}: published ${r.published}, learned ${r.learned}`]
    for (const x of r.refused)
      lines.push(`  refused ${x.id.slice(0, 12)}… (kind ${x.kind}): ${x.message}`)
    return lines
  })
}
