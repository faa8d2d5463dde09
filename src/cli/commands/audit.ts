import { KithError } from '../../errors.js'
import type { NostrEvent } from '../../events/event.js'
import { Kind } from '../../events/kinds.js'
import { audit, type AuditReport } from '../../grants/audit.js'
import { resolveKithHome } from '../../identity/home.js'
import { loadIdentity } from '../../identity/keys.js'
import { GrantBook } from '../../node/grant-book.js'
import { NodeStore } from '../../store/node-store.js'
import { declare } from '../declare.js'
import type { Out } from '../io.js'

export const auditCommand = declare({
  name: 'audit',
  summary: 'check who asked the agents, who approved, and whether the rules allowed it',
  usage: ['kith audit [--json]'],
  arity: { min: 0, max: 0, error: 'kith audit takes no arguments' },
  options: { json: { type: 'boolean', description: 'print the report as JSON' } },
  about: `Checks the signed events in this node's store, offline, and prints per agent turn: who prompted it
(the key and its person) and the grant chain valid then, each permission card (tool kind, title,
input hash, the agent policy it names and the one in force at its date), each decision (who, and
whether they could approve under the policy in force then), the outcome and how long it took.
It flags what the rules did not allow: an answered card whose decisions came from someone who may
not approve, a quorum card that went on short of its people (two devices of one person are one),
a card decided after its policy changed, a card naming a policy not in force, a session started
in a mode by someone who is not an approver, a prompt from a key with no valid grant. Exit 1
when it flags anything. In a sealed fleet it reads what this device could open.`,
})

/** The kinds an audit reads; agent policies with every version this node kept. */
const auditedKinds = [
  Kind.ChatMessage,
  Kind.PermissionRequest,
  Kind.PermissionDecision,
  Kind.AgentControl,
]

export function runAudit(argv: string[], out: Out): number {
  const parsed = auditCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const id = loadIdentity(resolveKithHome())
  const fleet = id.config.fleet
  if (fleet === undefined)
    throw new KithError('not-initialized', 'this machine is not in a fleet yet: nothing to audit')
  const store = new NodeStore(id.home)
  let report: AuditReport
  try {
    const book = new GrantBook(store.events, fleet)
    const events: NostrEvent[] = [...store.events.allVersionsOfKind(Kind.AgentPolicy)]
    for (const kind of auditedKinds) events.push(...store.events.eventsOfKind(kind))
    report = audit(events, book.verifier)
  } finally {
    store.close()
  }
  if (parsed.values.json) out.json(report)
  else for (const line of reportLines(report)) out.line(line)
  return report.flags.length === 0 ? 0 : 1
}

const short = (key: string | undefined) => (key === undefined ? 'nobody' : key.slice(0, 8))
const iso = (at: number) => new Date(at * 1000).toISOString().replace('.000Z', 'Z')

/** The report for a person: a block per turn, then the flags. */
export function reportLines(report: AuditReport): string[] {
  const lines: string[] = []
  for (const t of report.turns) {
    lines.push(
      `${iso(t.at)} agent ${short(t.agent)} in #${t.channel ?? '?'}: prompt ${short(t.prompt)} by ${short(t.prompter.key)} (person ${short(t.prompter.person)}, chain ${t.chain.length === 0 ? 'none valid' : t.chain.map(short).join(' → ')})${t.mode === undefined ? '' : `, mode ${t.mode}`}: ${t.outcome}${t.durationSeconds === undefined ? '' : ` in ${t.durationSeconds} s`}`,
    )
    for (const c of t.cards) {
      lines.push(
        `  card ${short(c.id)} ${c.toolKind} "${c.title}" input ${c.input.slice(0, 12)}… policy ${short(c.policy)} (in force ${short(c.policyInForce)})${c.quorum === undefined ? '' : ` quorum ${c.quorum.n}`}: ${c.outcome}`,
      )
      for (const d of c.decisions)
        lines.push(
          `    ${d.optionKind ?? d.optionId} by ${short(d.author)} (person ${short(d.person)}) ${d.approver ? 'approver' : 'NOT an approver'} at ${iso(d.at)}`,
        )
    }
  }
  if (report.turns.length === 0) lines.push('no agent turns in this node’s store')
  lines.push(
    report.flags.length === 0
      ? `ok: ${report.turns.length} turn${report.turns.length === 1 ? '' : 's'}, nothing flagged`
      : `${report.flags.length} flagged:`,
  )
  for (const f of report.flags) lines.push(`  ⚠ ${f.code} (${short(f.event)}): ${f.message}`)
  return lines
}

/** What the command index loads. */
export { auditCommand as command, runAudit as run }
