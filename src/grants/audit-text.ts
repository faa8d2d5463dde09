import type { AuditKey, AuditReport, AuditTurn } from './audit.js'

/**
 * `kith audit`'s report as a person reads it, in lines: for the terminal, the CLI's HTML page and
 * the web app's Audit view alike. The report itself (audit.ts) is the JSON of `--json`.
 */

const time = (t: number) => new Date(t * 1000).toISOString().replace('.000Z', 'Z')
const short = (hex: string) => hex.slice(0, 8)
export const auditWho = (k: AuditKey): string => {
  const name = k.name ?? short(k.key)
  if (k.person === undefined) return `${name} (not a member then)`
  if (k.person === k.key) return name
  return `${name} (${k.personName ?? short(k.person)})`
}

function policyLine(t: AuditTurn): string {
  const p = t.policy
  if (p === undefined) return 'policy: none on record'
  const list = (l: string | readonly string[]) => (typeof l === 'string' ? l : `${l.length} keys`)
  return `policy ${short(p.id)}: allow ${list(p.allow)}, approvers ${list(p.approvers)}, ${p.permissions}${p.quorum === undefined ? '' : `, quorum ${p.quorum.n} for ${p.quorum.for.join(',')}`}`
}

/** The report as lines of text. */
export function auditText(r: AuditReport): string[] {
  const out: string[] = []
  const flagsOf = new Map<string, string[]>()
  for (const f of r.flags)
    if (f.turn !== undefined) flagsOf.set(f.turn, [...(flagsOf.get(f.turn) ?? []), f.text])
  for (const t of r.turns) {
    out.push(
      `${time(t.at)}  ${auditWho(t.agent)} in #${t.channel ?? '?'}: turn ${short(t.id)} (${t.outcome}${t.seconds === undefined ? '' : `, ${t.seconds} s`})`,
    )
    out.push(
      `  prompted by ${auditWho(t.prompter)}${t.prompter.allowed === false ? ' — NOT allowed by the policy' : ''} via ${t.prompter.chain.length} grant${t.prompter.chain.length === 1 ? '' : 's'}`,
    )
    if (t.start !== undefined)
      out.push(
        `  started a session in ${t.start.project}${t.start.worktree === true ? ' (worktree)' : ''}${t.start.mode === undefined ? '' : `, mode ${t.start.mode}`}${t.start.model === undefined ? '' : `, model ${t.start.model}`}`,
      )
    out.push(`  ${policyLine(t)}`)
    for (const c of t.cards) {
      out.push(
        `  card ${short(c.id)} ${c.toolKind} "${c.title}" input ${short(c.input)}: ${c.tally.state}${c.quorum === undefined ? '' : ` (${c.tally.allowedBy.length} of ${c.quorum.n} people)`}${c.ran === undefined ? '' : `, ran: ${c.ran}`}`,
      )
      for (const d of c.decisions)
        out.push(
          `    ${time(d.at)} ${d.optionKind ?? d.optionId} by ${auditWho(d.by)}${d.approver === false ? ' (not an approver)' : ''}${d.unbound === undefined ? '' : ` — answers nothing: ${d.unbound}`}`,
        )
    }
    const carded = new Set(t.cards.map((c) => c.toolCallId))
    for (const tool of t.tools.filter((x) => !carded.has(x.id)))
      out.push(
        `  ran ${tool.kind} "${tool.title}": ${tool.status}${tool.allowedBy === undefined ? ' (no card)' : ` (allowed by ${tool.allowedBy})`}`,
      )
    for (const text of flagsOf.get(t.id) ?? []) out.push(`  ⚑ ${text}`)
  }
  for (const f of r.flags.filter((x) => x.turn === undefined))
    out.push(`⚑ ${f.code}: ${f.text} (${short(f.event)})`)
  for (const n of r.notes) out.push(`note: ${n}`)
  const c = r.counts
  out.push(
    `${c.turns} turn${c.turns === 1 ? '' : 's'}, ${c.cards} card${c.cards === 1 ? '' : 's'}, ${c.decisions} decision${c.decisions === 1 ? '' : 's'}, ${c.policies} polic${c.policies === 1 ? 'y' : 'ies'} checked from ${c.events} events${c.vouched > 0 ? ` (${c.vouched} opened here, checked as they arrived)` : ''}${c.opened > 0 ? ` (${c.opened} sealed, opened after their signatures checked)` : ''}: ${r.flags.length === 0 ? 'nothing flagged' : `${r.flags.length} flagged`}`,
  )
  return out
}
