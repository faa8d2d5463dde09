import { useSignal } from '@preact/signals'
import type { SessionAction, SessionState } from '../../../browser-core.js'
import { unifiedLineClass } from '../lib/diff.js'
import type { FleetClient } from '../lib/fleet-client.js'
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

const message = (err: unknown) => (err instanceof Error ? err.message : String(err))

/**
 * The fleet's agent sessions, as their hosting nodes report them (kind 34150, the same events
 * `kith session list` reads): agent and machine, the thread it works in, its state, title,
 * directory, mode, model and usage. Each opens its thread, and can be steered as `kith session`
 * does (kind 4150: its mode or model set, closed, its branch diff shown); a new one can be
 * started in one of a host's projects.
 */
export function SessionsView({ client }: { client: FleetClient }) {
  const m = client.model
  void m.revision.value
  const all = useSignal(false)
  const list = m.sessions(all.value)
  return (
    <section class="sessions" aria-labelledby="sessions-title">
      <h3 id="sessions-title">Sessions</h3>
      <NewSession client={client} />
      <label class="muted">
        <input
          type="checkbox"
          checked={all.value}
          onChange={(e) => (all.value = e.currentTarget.checked)}
        />{' '}
        closed ones too
      </label>
      {list.length === 0 && <p class="muted">No agent is working on anything yet.</p>}
      <ul>
        {list.map((s) => (
          <SessionItem key={`${s.host}:${s.address}`} client={client} s={s} />
        ))}
      </ul>
    </section>
  )
}

function SessionItem({ client, s }: { client: FleetClient; s: SessionState }) {
  const m = client.model
  // The host's answer arrives as any event does: this item reads it on every revision.
  void m.revision.value
  const where = s.worktree?.path ?? s.cwd
  const u = usage(s)
  // The request last sent from here, and what it was, to show the host's answer.
  const asked = useSignal<{ id: string; action: SessionAction['action'] } | undefined>(undefined)
  const error = useSignal<string | undefined>(undefined)
  const mode = useSignal('')
  const modelPick = useSignal('')
  const ask = (request: SessionAction) => {
    error.value = undefined
    client.sessionRequest(s, request).then(
      (e) => (asked.value = { id: e.id, action: request.action }),
      (err: unknown) => (error.value = message(err)),
    )
  }
  const answer = asked.value === undefined ? undefined : m.answerTo(asked.value.id, s.channel)
  const open = s.status !== 'closed'
  return (
    <li class={`session ${s.status}`} aria-label={`session ${s.id}`}>
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
          s.worktree === undefined ? undefined : `branch ${s.worktree.branch}`,
          s.mode === undefined ? undefined : `mode ${s.mode}`,
          s.model === undefined ? undefined : `model ${s.model}`,
          u,
          s.activeAt === undefined ? undefined : `active ${when(s.activeAt)}`,
          s.id,
        ]
          .filter((x) => x !== undefined)
          .join(' · ')}
      </div>
      <div class="session-actions">
        {s.worktree !== undefined && (
          <button type="button" class="secondary small" onClick={() => ask({ action: 'diff' })}>
            Diff
          </button>
        )}
        {open && (s.modes?.length ?? 0) > 0 && (
          <span>
            <select
              aria-label="mode"
              value={mode.value}
              onChange={(e) => (mode.value = e.currentTarget.value)}
            >
              <option value="">mode…</option>
              {s.modes!.map((x) => (
                <option key={x.id} value={x.id}>
                  {x.name}
                </option>
              ))}
            </select>
            <button
              type="button"
              class="secondary small"
              disabled={mode.value === ''}
              onClick={() => ask({ action: 'set', mode: mode.value })}
            >
              Set mode
            </button>
          </span>
        )}
        {open && (s.models?.length ?? 0) > 0 && (
          <span>
            <select
              aria-label="model"
              value={modelPick.value}
              onChange={(e) => (modelPick.value = e.currentTarget.value)}
            >
              <option value="">model…</option>
              {s.models!.map((x) => (
                <option key={x} value={x}>
                  {x}
                </option>
              ))}
            </select>
            <button
              type="button"
              class="secondary small"
              disabled={modelPick.value === ''}
              onClick={() => ask({ action: 'set', model: modelPick.value })}
            >
              Set model
            </button>
          </span>
        )}
        {open && (
          <button type="button" class="danger small" onClick={() => ask({ action: 'close' })}>
            Close
          </button>
        )}
      </div>
      {error.value !== undefined && <p class="error">{error.value}</p>}
      {asked.value !== undefined && answer === undefined && (
        <p class="muted">sent; waiting for {m.who(s.host).name} to answer…</p>
      )}
      {answer !== undefined && <Answer text={answer.content} />}
    </li>
  )
}

/** The host's notice: its first line, and a diff it carries (fenced) shown line by line. */
function Answer({ text }: { text: string }) {
  const fenced = /\n\n```diff\n([\s\S]*)\n```$/.exec(text)
  const summary = text.split('\n')[0]
  return (
    <div class="session-answer" role="status">
      <p>{summary}</p>
      {fenced !== null && (
        <figure class="diff" aria-label="session diff">
          <pre>
            {fenced[1]!.split('\n').map((l, i) => (
              <span key={i} class={unifiedLineClass(l)}>
                {l}
                {'\n'}
              </span>
            ))}
          </pre>
        </figure>
      )}
    </div>
  )
}

/**
 * Starts a session as `kith session new` does: a prompt to the agent carrying where it starts
 * (one of its host's projects, a worktree of it) and, optionally, its mode and model.
 */
function NewSession({ client }: { client: FleetClient }) {
  const m = client.model
  const shown = useSignal(false)
  const agent = useSignal('')
  const project = useSignal('')
  const worktree = useSignal(false)
  const mode = useSignal('')
  const model = useSignal('')
  const channel = useSignal('ops')
  const prompt = useSignal('')
  const error = useSignal<string | undefined>(undefined)
  const sent = useSignal<string | undefined>(undefined)
  if (!shown.value)
    return (
      <button type="button" class="secondary" onClick={() => (shown.value = true)}>
        New session
      </button>
    )
  const agents = m.mentionable().filter((x) => x.who.role === 'agent')
  const field = (label: string, value: { value: string }, placeholder = '') => (
    <label>
      {label}{' '}
      <input
        value={value.value}
        placeholder={placeholder}
        onInput={(e) => (value.value = e.currentTarget.value)}
      />
    </label>
  )
  return (
    <form
      class="new-session"
      aria-label="New session"
      onSubmit={(e) => {
        e.preventDefault()
        error.value = undefined
        const handle = agent.value || agents[0]?.handle
        if (handle === undefined) {
          error.value = 'no agent in this fleet to start a session with'
          return
        }
        client
          .post(channel.value.replace(/^#/, ''), `@${handle} ${prompt.value}`, {
            start: {
              project: project.value.trim(),
              ...(worktree.value ? { worktree: true } : {}),
              ...(mode.value === '' ? {} : { mode: mode.value }),
              ...(model.value === '' ? {} : { model: model.value }),
            },
          })
          .then(
            (ev) => {
              sent.value = ev.id
              prompt.value = ''
            },
            (err: unknown) => (error.value = message(err)),
          )
      }}
    >
      <label>
        Agent{' '}
        <select
          value={agent.value === '' ? agents[0]?.handle : agent.value}
          onChange={(e) => (agent.value = e.currentTarget.value)}
        >
          {agents.map((a) => (
            <option key={a.pubkey} value={a.handle}>
              {a.handle}
            </option>
          ))}
        </select>
      </label>
      {field('Project', project, "a project on the agent's machine")}
      <label>
        <input
          type="checkbox"
          checked={worktree.value}
          onChange={(e) => (worktree.value = e.currentTarget.checked)}
        />{' '}
        in a worktree of its own
      </label>
      {field('Mode', mode, 'optional')}
      {field('Model', model, 'optional')}
      {field('Channel', channel)}
      <label>
        First prompt{' '}
        <textarea value={prompt.value} onInput={(e) => (prompt.value = e.currentTarget.value)} />
      </label>
      <button type="submit" disabled={project.value.trim() === '' || prompt.value.trim() === ''}>
        Start
      </button>
      {error.value !== undefined && <p class="error">{error.value}</p>}
      {sent.value !== undefined && (
        <p class="muted">
          sent: it shows here once its host takes it, or{' '}
          <a href={href({ view: 'channel', channel: channel.value, thread: sent.value })}>
            its thread
          </a>{' '}
          says why not
        </p>
      )}
    </form>
  )
}
