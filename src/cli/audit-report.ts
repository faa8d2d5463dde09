import type { AuditKey, AuditReport, AuditTurn } from '../grants/audit.js'

/**
 * `kith audit`'s report for a person: text for a terminal, and one HTML page with a timeline per
 * agent. The report itself (grants/audit.ts) is the JSON of `--json`; these only lay it out.
 */

const time = (t: number) => new Date(t * 1000).toISOString().replace('.000Z', 'Z')
const short = (hex: string) => hex.slice(0, 8)
const who = (k: AuditKey) => {
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
      `${time(t.at)}  ${who(t.agent)} in #${t.channel ?? '?'}: turn ${short(t.id)} (${t.outcome}${t.seconds === undefined ? '' : `, ${t.seconds} s`})`,
    )
    out.push(
      `  prompted by ${who(t.prompter)}${t.prompter.allowed === false ? ' — NOT allowed by the policy' : ''} via ${t.prompter.chain.length} grant${t.prompter.chain.length === 1 ? '' : 's'}`,
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
          `    ${time(d.at)} ${d.optionKind ?? d.optionId} by ${who(d.by)}${d.approver === false ? ' (not an approver)' : ''}${d.unbound === undefined ? '' : ` — answers nothing: ${d.unbound}`}`,
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
    `${c.turns} turn${c.turns === 1 ? '' : 's'}, ${c.cards} card${c.cards === 1 ? '' : 's'}, ${c.decisions} decision${c.decisions === 1 ? '' : 's'}, ${c.policies} polic${c.policies === 1 ? 'y' : 'ies'} checked from ${c.events} events${c.vouched > 0 ? ` (${c.vouched} opened here, checked as they arrived)` : ''}: ${r.flags.length === 0 ? 'nothing flagged' : `${r.flags.length} flagged`}`,
  )
  return out
}

const esc = (s: string) =>
  s.replace(
    /[&<>"']/g,
    (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!,
  )

/** The report as one self-contained HTML page: a timeline per agent, flags marked. */
export function auditHtml(r: AuditReport): string {
  const byAgent = new Map<string, AuditTurn[]>()
  for (const t of r.turns) byAgent.set(t.agent.key, [...(byAgent.get(t.agent.key) ?? []), t])
  const flagged = new Set(r.flags.map((f) => f.turn))
  const lines = auditText(r)
  const sections = [...byAgent.values()].map((turns) => {
    const items = turns
      .map((t) => {
        const text = auditText({
          ...r,
          turns: [t],
          flags: r.flags.filter((f) => f.turn === t.id),
          notes: [],
        })
          .slice(0, -1)
          .map(esc)
          .join('\n')
        return `<li class="${flagged.has(t.id) ? 'flag' : 'ok'}"><pre>${text}</pre></li>`
      })
      .join('\n')
    return `<section><h2>${esc(who(turns[0]!.agent))}</h2><ol class="timeline">${items}</ol></section>`
  })
  const general = r.flags
    .filter((f) => f.turn === undefined)
    .map((f) => `<li class="flag">${esc(`${f.code}: ${f.text}`)}</li>`)
    .join('\n')
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>kith audit</title>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<style>
body{font:14px system-ui,sans-serif;margin:2em;max-width:70em}
pre{white-space:pre-wrap;margin:0}
.timeline{list-style:none;padding:0;border-left:3px solid #ccc}
.timeline li{margin:0 0 1em 0;padding:.5em 1em}
li.flag{border-left:4px solid #c00;background:#fee}
li.ok{border-left:4px solid #2a2}
</style></head><body>
<h1>kith audit</h1>
<p>${esc(lines.at(-1) ?? '')}</p>
${general === '' ? '' : `<h2>Flags</h2><ul>${general}</ul>`}
${sections.join('\n')}
${r.notes.length === 0 ? '' : `<h2>Notes</h2><ul>${r.notes.map((n) => `<li>${esc(n)}</li>`).join('')}</ul>`}
</body></html>
`
}
