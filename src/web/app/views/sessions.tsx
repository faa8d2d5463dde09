import type { SessionState } from '../../../browser-core.js'
import type { FleetModel } from '../lib/fleet.js'
import { when } from './format.js'
import { href } from './route.js'

function usage(s: SessionState): string | undefined {
  const u = s.usage
  if (u === undefined) return undefined
  const parts: string[] = []
  if (u.used !== undefined)
    parts.push(`${u.used}${u.size === undefined ? '' : `/${u.size}`} tokens`)
  if (u.cost !== undefined) parts.push(`${u.cost.amount} ${u.cost.currency}`)
  return parts.length === 0 ? undefined : parts.join(', ')
}

/**
 * The fleet's agent sessions, as their hosting nodes report them (kind 34150, the same events
 * `kith session list` reads): agent and machine, the thread it works in, its state, title,
 * directory, mode, model and usage. Each opens its thread.
 */
export function SessionsView({ model: m }: { model: FleetModel }) {
  void m.revision.value
  const list = m.sessions()
  return (
    <section class="sessions" aria-labelledby="sessions-title">
      <h3 id="sessions-title">Sessions</h3>
      {list.length === 0 && <p class="muted">No agent is working on anything yet.</p>}
      <ul>
        {list.map((s) => {
          const where = s.worktree?.path ?? s.cwd
          const u = usage(s)
          return (
            <li key={`${s.host}:${s.address}`} class={`session ${s.status}`}>
              <a
                href={href({
                  view: 'channel',
                  channel: s.channel,
                  ...(s.thread === undefined ? {} : { thread: s.thread }),
                })}
              >
                <span class="name">{m.who(s.agent).name}</span>{' '}
                <span class="muted">
                  on {m.who(s.host).name} · #{s.channel}
                  {s.thread === undefined ? ' (main thread)' : ''}
                </span>
              </a>{' '}
              <span class={`state ${s.status}`}>{s.status.replace('-', ' ')}</span>
              {s.title !== undefined && <div class="title">{s.title}</div>}
              <div class="muted details">
                {[
                  where,
                  s.mode === undefined ? undefined : `mode ${s.mode}`,
                  s.model === undefined ? undefined : `model ${s.model}`,
                  u,
                  s.activeAt === undefined ? undefined : `active ${when(s.activeAt)}`,
                  s.id,
                ]
                  .filter((x) => x !== undefined)
                  .join(' · ')}
              </div>
            </li>
          )
        })}
      </ul>
    </section>
  )
}
