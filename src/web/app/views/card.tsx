import { useSignal } from '@preact/signals'
import { useEffect } from 'preact/hooks'
import { optionLabel, optionsInOrder, tallyText } from '../../../browser-core.js'
import type { FleetClient } from '../lib/fleet-client.js'
import { unifiedLineClass } from '../lib/diff.js'
import { when } from './format.js'

/**
 * A permission card (kind 4142): the agent's tool call, why it is sensitive if it is, what it
 * will do (its preview: a diff, a command, a path), and its options as buttons; one tap signs a kind-4143 decision with this device's key. Then it shows
 * who decided what, or that it expired.
 */
export function PermissionCard({ client, id }: { client: FleetClient; id: string }) {
  const m = client.model
  void m.revision.value
  const clock = useClock()
  const sending = useSignal<string | undefined>(undefined)
  const error = useSignal<string | undefined>(undefined)
  const r = m.request(id)
  if (r === undefined) return null
  const agent = m.who(r.agent)
  const decisions = m.decisionsFor(r.id)
  const open = m.requestOpen(r, clock)
  const left = r.expires - clock
  // A quorum card (kith-agents "Quorum"): who allowed so far; a person allows it once.
  const count = m.tallyOf(r, clock)
  const me = m.myPerson(clock)
  const allowedByMe = count !== undefined && me !== undefined && count.allowedBy.includes(me)
  return (
    <article
      class={`card permission ${open ? 'open' : 'closed'}`}
      data-request={r.id}
      {...(count === undefined ? {} : { 'data-quorum': `${count.allowedBy.length}/${count.n}` })}
    >
      <header>
        <span class="kind-badge">permission</span>
        <span>
          <strong>{agent.name}</strong> asks to run: <code>{r.title}</code>{' '}
          <span class="muted">({r.toolKind})</span>
        </span>
        <time>{when(r.createdAt)}</time>
      </header>
      {r.sensitive !== undefined && <p class="warning">⚠ {r.sensitive}</p>}
      {r.preview !== undefined && (
        <Preview text={r.preview} bytes={r.previewBytes} diff={r.preview.startsWith('--- ')} />
      )}
      {count !== undefined && (
        <p class="quorum">
          👥 needs {count.n} people: {tallyText(count)}
          {count.allowedBy.length > 0 &&
            ` (allowed by ${count.allowedBy.map((p) => (p === me ? 'you' : m.who(p).name)).join(', ')})`}
        </p>
      )}
      {open ? (
        <div class="options">
          {optionsInOrder(r.options).map((o) => (
            <button
              key={o.optionId}
              type="button"
              class={o.kind.startsWith('reject') ? 'danger' : ''}
              disabled={sending.value !== undefined || (allowedByMe && o.kind.startsWith('allow'))}
              title={
                allowedByMe && o.kind.startsWith('allow') ? 'you already allowed it' : undefined
              }
              onClick={() => {
                sending.value = o.optionId
                error.value = undefined
                client.decide(r, o.optionId).catch((err: unknown) => {
                  sending.value = undefined
                  error.value = err instanceof Error ? err.message : String(err)
                })
              }}
            >
              {optionLabel(o)}
            </button>
          ))}
          <span class="muted expires">
            {left > 60 ? `${Math.ceil(left / 60)} min left` : `${Math.max(0, left)} s left`}
          </span>
        </div>
      ) : (
        <p class="decided">
          {decisions.length > 0
            ? decisions
                .map((d) => {
                  const option =
                    r.options.find((o) => o.optionId === d.optionId)?.name ?? d.optionId
                  return `${option} (by ${m.who(d.author).name})`
                })
                .join('; ')
            : r.expires < clock
              ? `Expired at ${when(r.expires)}: the tool call was cancelled.`
              : 'Closed: the turn ended.'}
        </p>
      )}
      {error.value !== undefined && <p class="error">{error.value}</p>}
    </article>
  )
}

/** Lines of a preview shown before "Show all". */
const previewFold = 12

/**
 * What the call will do, as the agent told it: a diff (lines coloured by their +/-), a command
 * and its cwd, a path. A long one shows its first lines and a "Show all" button; one the host
 * cut says how much of it is here.
 */
function Preview({
  text,
  bytes,
  diff,
}: {
  text: string
  bytes: number | undefined
  diff: boolean
}) {
  const all = useSignal(false)
  const lines = text.split('\n')
  const shown = all.value ? lines : lines.slice(0, previewFold)
  const lineClass = (l: string) => (diff ? unifiedLineClass(l) : 'ctx')
  return (
    <figure class="diff preview" aria-label="what it will do">
      <pre>
        {shown.map((l, i) => (
          <span key={i} class={lineClass(l)}>
            {l}
            {'\n'}
          </span>
        ))}
      </pre>
      {lines.length > previewFold && (
        <button type="button" class="link" onClick={() => (all.value = !all.value)}>
          {all.value ? 'Show less' : `Show all ${lines.length} lines`}
        </button>
      )}
      {bytes !== undefined && <figcaption>cut by the host: the whole is {bytes} bytes</figcaption>}
    </figure>
  )
}

/** The current time in seconds, ticking every second (for countdowns). */
function useClock(): number {
  const t = useSignal(Math.floor(Date.now() / 1000))
  useEffect(() => {
    const timer = setInterval(() => (t.value = Math.floor(Date.now() / 1000)), 1000)
    return () => clearInterval(timer)
  }, [])
  return t.value
}
