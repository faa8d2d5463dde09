import { readFileSync, writeFileSync } from 'node:fs'
import { KithError } from '../../errors.js'
import { sealedKinds } from '../../events/e2e-seal.js'
import { parseEvent, verifyEventSignature, type NostrEvent } from '../../events/event.js'
import { Kind } from '../../events/kinds.js'
import { audit, type AuditReport } from '../../grants/audit.js'
import { resolveKithHome } from '../../identity/home.js'
import { loadIdentity } from '../../identity/keys.js'
import { declare } from '../declare.js'
import { parseSince } from '../duration.js'
import type { Out } from '../io.js'
import { withLocalNode, withStore } from '../local-node.js'
import { auditHtml } from '../audit-report.js'
import { auditText } from '../../grants/audit-text.js'

export const auditCommand = declare({
  name: 'audit',
  summary: 'check who prompted, approved and ran what, against the rules then (--json, --html)',
  usage: [
    'kith audit [--since T] [--agent NAME] [--file F] [--json] [--html FILE]',
    'kith audit export [--since T] > fleet.audit.jsonl',
    '    the signed events an audit reads, one JSON event per line',
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
2 a bad option or a --file that is not an export, 5 no such --file or --agent.
By default it reads this node's store (node.db; kith up need not run): sealed events this node
opened are read as they were checked on arrival. --file audits an export instead (every
signature checked; sealed events no key here opens are counted and said, and the grants,
revocations and policies are still checked). See nips/kith-agents.md, "Audit".`,
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

function fileEvents(path: string): NostrEvent[] {
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
  const out: NostrEvent[] = []
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return
    try {
      out.push(parseEvent(JSON.parse(line)))
    } catch (err) {
      if (!(err instanceof KithError) && !(err instanceof SyntaxError)) throw err
      throw new KithError(
        'usage',
        `--file ${path}, line ${i + 1}: not a signed Nostr event (${err.message}); kith audit export writes one a line`,
      )
    }
  })
  return out
}

export function runAudit(argv: string[], out: Out): number {
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
  if (sub === 'export') {
    if (values.file !== undefined)
      throw new KithError('usage', 'kith audit export reads this node, not --file')
    const events = nodeEvents(id.home, since)
    // Only what still carries its own signature: an event this node opened is not exported as
    // if it were signed so (its signature is the sealed form's).
    let left = 0
    for (const e of events) {
      if (verifyEventSignature(e)) out.line(JSON.stringify(e))
      else left++
    }
    out.err(
      `exported ${events.length - left} signed events${left > 0 ? `; ${left} opened here from sealed ones are not (their signature is the sealed form's): audit those on this node, with kith audit` : ''}`,
    )
    return 0
  }
  const fromFile = values.file !== undefined
  let events = fromFile ? fileEvents(values.file!) : nodeEvents(id.home, since)
  if (fromFile && since !== undefined)
    events = events.filter(
      (e) =>
        e.kind === Kind.Grant ||
        e.kind === Kind.Revocation ||
        e.kind === Kind.AgentPolicy ||
        e.created_at >= since,
    )
  if (!fromFile) out.err(`reading this node's store (${events.length} events)…`)
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
    // node.db keeps a sealed event opened under the sealed form's id and signature; the node
    // checked that signature when it arrived. An export carries no such event.
    ...(fromFile ? {} : { vouched: (e: NostrEvent) => sealedKinds.has(e.kind) }),
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
