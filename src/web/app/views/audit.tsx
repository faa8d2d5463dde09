import { useSignal } from '@preact/signals'
import { useEffect } from 'preact/hooks'
import {
  audit,
  auditText,
  isSealed,
  sealedKinds,
  verifyEventSignature,
  type AuditReport,
  type NostrEvent,
} from '../../../browser-core.js'
import { idbAll } from '../lib/idb.js'
import type { FleetClient } from '../lib/fleet-client.js'

/**
 * The Audit view (kith-agents, "Audit"): `kith audit` over what this browser holds, checked
 * here by the same pure core the CLI runs. Sealed events are opened with this device's keys; an
 * opened one is taken as this page checked it when it arrived (its signature is the sealed
 * form's), and what no key here opens is counted and said.
 */
export function AuditView({ client }: { client: FleetClient }) {
  const m = client.model
  const report = useSignal<AuditReport | undefined>(undefined)
  const error = useSignal<string | undefined>(undefined)
  const run = async () => {
    error.value = undefined
    try {
      // The device's own grant and its chain come with its enrollment, not from a hub.
      const { record } = client.device
      const stored = [
        ...(await idbAll<NostrEvent>('events')),
        record.grant,
        ...record.chain,
        ...(record.revocations ?? []),
      ]
      const opened = new Set<string>()
      const events = stored.map((e) => {
        if (!isSealed(e)) return e
        const o = m.e2e.open(e)
        if (o === undefined) return e
        opened.add(o.id)
        return o
      })
      report.value = audit({
        fleet: client.device.record.fleet,
        events,
        verifySignature: verifyEventSignature,
        vouched: (e) => opened.has(e.id) && sealedKinds.has(e.kind),
        nameOf: (key) => m.who(key).name,
      })
    } catch (err) {
      error.value = err instanceof Error ? err.message : String(err)
    }
  }
  useEffect(() => {
    void run()
  }, [])
  const r = report.value
  if (error.value !== undefined)
    return (
      <main class="audit">
        <p class="error">The audit could not run: {error.value}</p>
      </main>
    )
  if (r === undefined)
    return (
      <main class="audit">
        <p>Checking this device's history…</p>
      </main>
    )
  const flagged = new Set(r.flags.map((f) => f.turn))
  const summary = auditText({ ...r, turns: [] }).at(-1) ?? ''
  return (
    <main class="audit">
      <h2>Audit</h2>
      <p class={r.flags.length === 0 ? 'audit-summary ok' : 'audit-summary flagged'}>{summary}</p>
      <button type="button" onClick={() => void run()}>
        Check again
      </button>
      {r.flags
        .filter((f) => f.turn === undefined)
        .map((f) => (
          <p key={f.event + f.code} class="audit-flag" data-code={f.code}>
            ⚑ {f.text}
          </p>
        ))}
      <ol class="audit-turns">
        {[...r.turns].reverse().map((t) => (
          <li
            key={t.id + t.agent.key}
            class={flagged.has(t.id) ? 'flag' : 'ok'}
            data-flags={r.flags
              .filter((f) => f.turn === t.id)
              .map((f) => f.code)
              .join(' ')}
          >
            <pre>
              {auditText({
                ...r,
                turns: [t],
                flags: r.flags.filter((f) => f.turn === t.id),
                notes: [],
              })
                .slice(0, -1)
                .join('\n')}
            </pre>
          </li>
        ))}
      </ol>
      {r.notes.map((n) => (
        <p key={n} class="audit-note">
          {n}
        </p>
      ))}
    </main>
  )
}
