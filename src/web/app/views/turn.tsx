import { useSignal } from '@preact/signals'
import { channelOf, type NostrEvent } from '../../../browser-core.js'
import { lineDiff, unifiedLineClass } from '../lib/diff.js'
import type { FleetClient } from '../lib/fleet-client.js'
import type { ToolCall, Turn } from '../lib/turns.js'

const statusIcon: Record<string, string> = {
  pending: '○',
  in_progress: '◐',
  completed: '✓',
  failed: '✗',
}

/**
 * An agent's live progress on a prompt, from its observer frames: tool calls with their status
 * (and edits as diffs), its plan, its thoughts, the answer as it streams; and a Stop button
 * (a kind-4144 cancel) while the prompt is open. Once answered it folds into one line.
 */
export function TurnProgress({
  client,
  prompt,
  agent,
}: {
  client: FleetClient
  prompt: NostrEvent
  agent: string
}) {
  const m = client.model
  void m.revision.value
  const expanded = useSignal(false)
  const error = useSignal<string | undefined>(undefined)
  const turn = m.turn(prompt.id)
  const answered = m.answered(prompt.id, agent)
  const channel = channelOf(prompt) ?? 'general'
  const name = m.who(agent).name
  if (answered && (turn === undefined || (turn.tools.size === 0 && turn.plan.length === 0)))
    return null
  if (answered && turn !== undefined && !expanded.value)
    return (
      <button type="button" class="link turn-fold" onClick={() => (expanded.value = true)}>
        ▸ {name}: {turn.tools.size} tool call{turn.tools.size === 1 ? '' : 's'}
        {turn.plan.length > 0 ? `, a plan of ${turn.plan.length}` : ''}
      </button>
    )
  // A turn whose host went offline, or whose agent was removed, cannot finish: said so, and no
  // Stop (a cancel nobody is there to carry out).
  const stopped = answered ? undefined : m.turnStop(agent)
  const state = answered ? 'done' : (stopped ?? m.agentState(agent))
  const host = stopped === 'host offline' ? m.hostOf(agent) : undefined
  return (
    <section
      class={`turn ${answered ? 'done' : stopped !== undefined ? 'stalled' : 'live'}`}
      aria-label={`${name}'s progress`}
    >
      <header>
        <span class="agent">{name}</span>
        <span class="state">{state === 'idle' ? 'queued' : state}</span>
        {stopped === 'host offline' && (
          <span class="muted">
            {host === undefined ? 'its host' : m.who(host).name} went offline: this turn cannot
            finish until it is back
          </span>
        )}
        {stopped === 'removed' && (
          <span class="muted">{name} was removed from the fleet: this turn is over</span>
        )}
        {!answered && stopped === undefined && (
          <button
            type="button"
            class="danger small"
            onClick={() => {
              error.value = undefined
              client.cancel(channel, agent).catch((err: unknown) => {
                error.value = err instanceof Error ? err.message : String(err)
              })
            }}
          >
            Stop
          </button>
        )}
        {answered && (
          <button type="button" class="link" onClick={() => (expanded.value = false)}>
            fold
          </button>
        )}
      </header>
      {error.value !== undefined && <p class="error">{error.value}</p>}
      {turn !== undefined && <TurnBody turn={turn} />}
    </section>
  )
}

function TurnBody({ turn }: { turn: Turn }) {
  return (
    <>
      {turn.plan.length > 0 && (
        <ol class="plan">
          {turn.plan.map((p, i) => (
            <li key={i} class={p.status}>
              <span aria-hidden="true">
                {p.status === 'completed' ? '☑' : p.status === 'in_progress' ? '▶' : '☐'}
              </span>{' '}
              {p.content}
            </li>
          ))}
        </ol>
      )}
      {[...turn.tools.values()].map((t) => (
        <Tool key={t.id} tool={t} />
      ))}
      {turn.thoughts !== '' && (
        <p class="thought">
          <span aria-hidden="true">…</span> {turn.thoughts.slice(-400)}
        </p>
      )}
      {turn.message !== '' && <p class="streaming">{turn.message.slice(-600)}</p>}
    </>
  )
}

function Tool({ tool }: { tool: ToolCall }) {
  return (
    <div class={`tool ${tool.status}`}>
      <p>
        <span aria-hidden="true">{statusIcon[tool.status] ?? '•'}</span> {tool.title}{' '}
        <span class="muted">
          ({tool.kind}, {tool.status.replace('_', ' ')})
        </span>
        {tool.autoAllowed !== undefined && <span class="tag">allowed by {tool.autoAllowed}</span>}
      </p>
      {tool.diffs.map((d) => (
        <figure class="diff" key={d.path}>
          <figcaption>{d.path}</figcaption>
          <pre>
            {lineDiff(d.oldText, d.newText).map((l, i) => (
              <span key={i} class={l.op === '+' ? 'add' : l.op === '-' ? 'del' : 'ctx'}>
                {l.op} {l.text}
                {'\n'}
              </span>
            ))}
          </pre>
        </figure>
      ))}
      {tool.unified !== undefined && (
        <figure class="diff">
          <pre>
            {tool.unified.split('\n').map((l, i) => (
              <span key={i} class={unifiedLineClass(l)}>
                {l}
                {'\n'}
              </span>
            ))}
          </pre>
        </figure>
      )}
      {tool.text.map((t, i) => (
        <pre key={i} class="tool-output">
          {t.slice(-1000)}
        </pre>
      ))}
    </div>
  )
}
