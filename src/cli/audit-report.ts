import type { AuditReport, AuditTurn } from '../grants/audit.js'
import { auditText, auditWho } from '../grants/audit-text.js'

/** `kith audit --html`: the report as one self-contained page, a timeline per agent. */

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
    return `<section><h2>${esc(auditWho(turns[0]!.agent))}</h2><ol class="timeline">${items}</ol></section>`
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
