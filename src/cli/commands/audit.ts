import { readFileSync, writeFileSync } from 'node:fs'
import { isKithError, KithError } from '../../errors.js'
import type { Epoch } from '../../events/e2e-epoch.js'
import { isSealed, sealedEpochId, sealedKinds } from '../../events/e2e-seal.js'
import { verifyEventSignature, type NostrEvent } from '../../events/event.js'
import { Kind } from '../../events/kinds.js'
import { audit, type AuditReport } from '../../grants/audit.js'
import { resolveKithHome } from '../../identity/home.js'
import { loadIdentity } from '../../identity/keys.js'
import { declare } from '../declare.js'
import { parseSince } from '../duration.js'
import type { Out } from '../io.js'
import { openLocalFleet, withLocalNode, withStore } from '../local-node.js'
import { auditHtml } from '../audit-report.js'
import { auditText } from '../../grants/audit-text.js'
import { epochLine, parseExportLine } from '../../grants/audit-export.js'
import type { Identity } from '../../identity/keys.js'
import { hubAuditEvents, hubEventsById } from '../audit-hub.js'

export const auditCommand = declare({
  name: 'audit',
  summary: 'check who prompted, approved and ran what, against the rules then (--json, --html)',
  usage: [
    'kith audit [--since T] [--agent NAME] [--file F | --hub URL] [--json] [--html FILE]',
    'kith audit export [--since T] [--hub URL] > fleet.audit.jsonl',
    '    the signed events an audit reads, one JSON event per line (and, in a sealed fleet,',
    '    the sealed events with the keys of their epochs, so a verifier opens them)',
  ],
  words: ['export'],
  arity: { min: 0, max: 1, error: 'kith audit takes no argument but export' },
  options: {
    since: {
      type: 'string',
      value: 'T',
      description: 'turns since: unix seconds, an ISO date, or a duration ago (30d)',
    },
    agent: { type: 'string', value: 'NAME', description: "one agent's turns (its name or key)" },
    file: {
      type: 'string',
      value: 'F',
      description: 'audit the events in F (from kith audit export; - for stdin), not this node',
    },
    hub: {
      type: 'string',
      value: 'URL',
      description:
        "read the hub's events, as this device (sealed ones opened with its keys), not node.db",
    },
    json: { type: 'boolean', description: 'the report as one JSON object' },
    html: {
      type: 'string',
      value: 'FILE',
      description: 'also write an HTML page: a timeline per agent',
    },
  },
  about: `Checks the fleet's history offline, trusting no hub and no node: per agent turn, who
prompted (person and device) and the grant chain that let them at that time, the agent's policy
in force (kind 34151), each card with its tool kind, title and input hash, each decision with who
made it and whether they could approve under that policy (a quorum counts people, not devices),
what ran and how the turn ended. It flags what the rules did not allow: a decision by a
non-approver that counted, a quorum card that ran short, a tool that changes things run with no
card while the policy said ask, a session started with a mode by someone not an approver, a card
answered after its policy changed, a forged policy, a bad signature.
Exit status: 0 nothing flagged, 1 something flagged (each flag has a stable code in --json),
2 a bad option, a bad --hub URL or a --file that is not an export, 5 no such --file or
--agent, 6 the --hub could not be reached or refused this device.
By default it reads this node's store (node.db; kith up need not run): sealed events this node
opened are read as they were checked on arrival. --hub URL reads the hub's copy instead,
authenticated as this device: every signature is checked, and sealed events are opened with
this device's keys (a hub keeps only each policy's newest version). --file audits an export
(every signature checked; sealed events are opened with the epoch keys the export discloses;
those no key opens are counted and said, and the grants, revocations and policies are still
checked). In a sealed fleet, export writes each sealed event as the hub carries it (from --hub,
else the configured hubs or the running kith up's own) with the key of its epoch: whoever
holds the file can read the sealed events of those epochs. See nips/kith-agents.md, "Audit".`,
})

/** The kinds an audit reads: authority, policies, prompts and answers, cards and decisions. */
const auditKinds = [
  Kind.Grant,
  Kind.Revocation,
  Kind.ChatMessage,
  Kind.PermissionRequest,
  Kind.PermissionDecision,
] as const

/** This node's events an audit reads: every version of each policy, everything else stored. */
function nodeEvents(home: string, since: number | undefined): NostrEvent[] {
  return withStore(home, (store) => {
    const out: NostrEvent[] = [...store.events.allVersionsOfKind(Kind.AgentPolicy)]
    for (const kind of auditKinds)
      for (const e of store.events.eventsOfKind(kind))
        if (
          since === undefined ||
          kind === Kind.Grant ||
          kind === Kind.Revocation ||
          e.created_at >= since
        )
          out.push(e)
    return out
  })
}

/** A file error as a person reads it. */
function why(e: NodeJS.ErrnoException): string {
  if (e.code === 'ENOENT') return 'no such file or folder'
  if (e.code === 'EACCES') return 'permission denied'
  if (e.code === 'EISDIR') return 'it is a folder'
  return e.message
}

/** An export's events and the epoch keys it discloses. */
function fileEvents(path: string): { events: NostrEvent[]; epochs: Epoch[] } {
  let text: string
  try {
    text = readFileSync(path === '-' ? 0 : path, 'utf8')
  } catch (err) {
    const e = err as NodeJS.ErrnoException
    // Not 1: a script reads exit status 1 as "something flagged".
    throw new KithError(
      e.code === 'ENOENT' ? 'not-found' : 'usage',
      `--file ${path}: cannot read it (${why(e)})`,
    )
  }
  const events: NostrEvent[] = []
  const epochs: Epoch[] = []
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return
    try {
      const parsed = parseExportLine(JSON.parse(line))
      if ('epoch' in parsed) epochs.push(parsed.epoch)
      else events.push(parsed.event)
    } catch (err) {
      if (!(err instanceof KithError) && !(err instanceof SyntaxError)) throw err
      throw new KithError(
        'usage',
        `--file ${path}, line ${i + 1}: not a signed Nostr event nor an epoch key (${err.message}); kith audit export writes one a line`,
      )
    }
  })
  return { events, epochs }
}

/** This node's keys of the epochs `events` were sealed under. */
function keysOf(home: string, events: readonly NostrEvent[]): Map<string, Epoch> {
  const ids = new Set(events.filter(isSealed).map((e) => sealedEpochId(e)!))
  return withStore(home, (store) => {
    const out = new Map<string, Epoch>()
    for (const id of ids) {
      const epoch = store.e2e.epoch(id)
      if (epoch !== undefined) out.set(id, epoch)
    }
    return out
  })
}

/** The hub's events, or exit status 6 with why when it cannot be read. */
async function fromHub<T>(url: string, out: Out, read: () => Promise<T>): Promise<T | number> {
  try {
    return await read()
  } catch (err) {
    // bad-url stays a usage error (2); a hub not reached, or refusing this device, is 6 (not 1,
    // which says "flagged").
    if (!isKithError(err) || err.code === 'bad-url' || err.code === 'usage') throw err
    out.err(`kith: --hub ${url}: ${err.message}`)
    return 6
  }
}

/**
 * kith audit export: this node's events that carry their own signature; for those it opened
 * from sealed ones, the sealed forms as a hub carries them (the configured hubs, else the
 * running kith up's), and the keys of their epochs; with --hub, that hub's events as it holds them.
 */
async function runExport(
  id: Identity,
  hub: string | undefined,
  since: number | undefined,
  out: Out,
): Promise<number> {
  let events: NostrEvent[]
  const sealedForms: NostrEvent[] = []
  let left = 0
  if (hub !== undefined) {
    const got = await fromHub(hub, out, () => hubAuditEvents(id, hub, since))
    if (typeof got === 'number') return got
    events = got.filter(verifyEventSignature)
  } else {
    events = []
    // Opened here from sealed ones: their signature is the sealed form's, which the hubs keep.
    const missing = new Set<string>()
    for (const e of nodeEvents(id.home, since))
      if (verifyEventSignature(e)) events.push(e)
      else missing.add(e.id)
    // The configured hubs, else the hub embedded in this machine's running kith up.
    const embedded =
      missing.size > 0 && id.config.hubs.length === 0
        ? await openLocalFleet(id).embeddedHub?.()
        : undefined
    for (const url of embedded === undefined ? id.config.hubs : [embedded]) {
      if (missing.size === 0) break
      try {
        for (const e of await hubEventsById(id, url, [...missing]))
          if (missing.has(e.id) && isSealed(e) && verifyEventSignature(e)) {
            sealedForms.push(e)
            missing.delete(e.id)
          }
      } catch (err) {
        if (!isKithError(err)) throw err
        out.err(`${url}: not reached (${err.message})`)
      }
    }
    left = missing.size
  }
  const written = [...events, ...sealedForms]
  const keys = keysOf(id.home, written)
  for (const e of written) out.line(JSON.stringify(e))
  for (const epoch of keys.values()) out.line(epochLine(epoch))
  const sealed = written.filter(isSealed).length
  out.err(
    `exported ${written.length} signed events` +
      (sealed > 0
        ? `, ${sealed} of them sealed, with the keys of ${keys.size} epoch${keys.size === 1 ? '' : 's'} (whoever holds the file reads the sealed events of those epochs)`
        : '') +
      (left > 0
        ? `; ${left} opened here from sealed ones are not: no hub gave their sealed form (try --hub URL), audit those on this node with kith audit`
        : ''),
  )
  return 0
}

export async function runAudit(argv: string[], out: Out): Promise<number> {
  const parsed = auditCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values, positionals } = parsed
  const sub = positionals[0]
  if (sub !== undefined && sub !== 'export')
    throw new KithError('usage', `kith audit ${sub}: unknown; did you mean kith audit export?`)
  const since = values.since === undefined ? undefined : parseSince(values.since)
  const id = loadIdentity(resolveKithHome())
  const fleet = id.config.fleet
  if (fleet === undefined) throw new KithError('not-initialized', 'this machine is in no fleet yet')
  if (values.file !== undefined && values.hub !== undefined)
    throw new KithError('usage', 'kith audit reads --file or --hub, not both')
  if (sub === 'export') {
    if (values.file !== undefined)
      throw new KithError('usage', 'kith audit export reads this node, not --file')
    return runExport(id, values.hub, since, out)
  }
  const fromFile = values.file !== undefined
  let events: NostrEvent[]
  let keyOf: ((epochId: string) => Epoch | undefined) | undefined
  if (fromFile) {
    const file = fileEvents(values.file!)
    events = file.events
    const disclosed = new Map(file.epochs.map((e) => [e.id, e]))
    keyOf = (epochId) => disclosed.get(epochId)
  } else if (values.hub !== undefined) {
    const hub = values.hub
    const got = await fromHub(hub, out, () => hubAuditEvents(id, hub, since))
    if (typeof got === 'number') return got
    events = got
    const held = keysOf(id.home, events)
    keyOf = (epochId) => held.get(epochId)
    out.err(`reading ${hub} as this device (${events.length} events)…`)
  } else events = nodeEvents(id.home, since)
  if (fromFile && since !== undefined)
    events = events.filter(
      (e) =>
        e.kind === Kind.Grant ||
        e.kind === Kind.Revocation ||
        e.kind === Kind.AgentPolicy ||
        e.created_at >= since,
    )
  if (!fromFile && values.hub === undefined)
    out.err(`reading this node's store (${events.length} events)…`)
  const nameOf = withLocalNode(({ names }) => {
    const known = new Map<string, string>()
    const keys = new Set<string>([fleet])
    for (const e of events) {
      keys.add(e.pubkey)
      if (e.kind === Kind.Grant) for (const t of e.tags) if (t[0] === 'p' && t[1]) keys.add(t[1])
    }
    for (const k of keys) known.set(k, names.who(k).name)
    // Read here: node.db is closed once this returns.
    return (key: string) => known.get(key)
  })
  let report: AuditReport = audit({
    nameOf,
    fleet,
    events,
    verifySignature: verifyEventSignature,
    ...(keyOf === undefined ? {} : { keyOf }),
    // node.db keeps a sealed event opened under the sealed form's id and signature; the node
    // checked that signature when it arrived. An export or a hub carries no such event.
    ...(fromFile || values.hub !== undefined
      ? {}
      : { vouched: (e: NostrEvent) => sealedKinds.has(e.kind) }),
  })
  if (values.agent !== undefined) {
    const a = values.agent
    // The fleet's agents, by their grants: a name that is none of them is a typo, not a pass.
    const agents = new Map<string, string | undefined>()
    for (const e of events)
      if (e.kind === Kind.Grant && e.tags.some((t) => t[0] === 'role' && t[1] === 'agent')) {
        const key = e.tags.find((t) => t[0] === 'p')?.[1]
        if (key !== undefined)
          agents.set(key, nameOf(key) ?? e.tags.find((t) => t[0] === 'name')?.[1])
      }
    if (![...agents].some(([key, name]) => key === a || name === a))
      throw new KithError(
        'not-found',
        `--agent ${a}: no agent of that name or key in this fleet${agents.size === 0 ? '' : ` (its agents: ${[...new Set(agents.values())].filter((n) => n !== undefined).join(', ')})`}`,
      )
    const turns = report.turns.filter((t) => t.agent.name === a || t.agent.key === a)
    const ids = new Set(turns.map((t) => t.id))
    const cards = turns.flatMap((t) => t.cards)
    report = {
      ...report,
      // The counts say what the report shows: this agent's turns, cards and decisions.
      counts: {
        ...report.counts,
        turns: turns.length,
        cards: cards.length,
        decisions: cards.reduce((n, c) => n + c.decisions.length, 0),
      },
      turns,
      flags: report.flags.filter((f) => f.turn === undefined || ids.has(f.turn)),
    }
  }
  if (values.html !== undefined) {
    try {
      writeFileSync(values.html, auditHtml(report))
    } catch (err) {
      const e = err as NodeJS.ErrnoException
      throw new KithError('usage', `--html ${values.html}: cannot write it (${why(e)})`)
    }
    out.err(`wrote ${values.html}`)
  }
  if (values.json) out.line(JSON.stringify(report, null, 2))
  else for (const line of auditText(report)) out.line(line)
  return report.flags.length === 0 ? 0 : 1
}

export { auditCommand as command, runAudit as run }
