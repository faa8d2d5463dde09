import { useSignal } from '@preact/signals'
import { useEffect } from 'preact/hooks'
import { isChannelName } from '../../../browser-core.js'
import type { FleetClient } from '../lib/fleet-client.js'
import { AuditView } from './audit.js'
import { ChatView } from './chat.js'
import { FleetView } from './fleet.js'
import { Removed } from './removed.js'
import { go, href, route } from './route.js'

/**
 * Which channel to show first: the last one opened; else the most recent with unread messages
 * (on a newly paired device, where the fleet talks), else the most recent; undefined when no
 * channel has anything in it yet (the history may still be coming: sealed messages open later).
 */
function firstChannel(client: FleetClient): string | undefined {
  const last = localStorage.getItem('kith.channel')
  if (last !== null && isChannelName(last)) return last
  const m = client.model
  const read = client.lastRead.value
  const recent = [...m.channels()]
    .filter((c) => m.lastActivity(c) > 0)
    .sort((a, b) => m.lastActivity(b) - m.lastActivity(a))
  return recent.find((c) => m.unread(c, read[c] ?? 0) > 0) ?? recent[0]
}

/**
 * #general opened only because nothing had come yet: left for the channel where messages come,
 * and not remembered as opened, until the person opens a channel themselves or it fills.
 */
let provisional: string | undefined

/** The app once paired: channels, chat, the fleet; one pane at a time on a phone. */
export function Shell({ client }: { client: FleetClient }) {
  const m = client.model
  const r = route.value
  const wide = useWide()
  const revision = m.revision.value
  useEffect(() => {
    // On a wide screen there is no bare channel list: open a channel.
    if (r.view === 'home' && wide) {
      const first = firstChannel(client)
      provisional = first === undefined ? 'general' : undefined
      go({ view: 'channel', channel: first ?? 'general' })
      return
    }
    if (r.view !== 'channel') return
    if (r.channel === provisional && m.lastActivity(r.channel) === 0) {
      // Chosen before the history came: go where it came, once it has.
      const better = firstChannel(client)
      if (better !== undefined) go({ view: 'channel', channel: better })
      return
    }
    provisional = undefined
    localStorage.setItem('kith.channel', r.channel)
  }, [r, wide, revision])
  if (m.removed.value !== undefined) return <Removed client={client} />
  const showList = wide || r.view === 'home'
  return (
    <div class={`shell ${wide ? 'wide' : 'narrow'}`}>
      <TopBar client={client} />
      <div class="panes">
        {showList && <ChannelList client={client} />}
        {r.view === 'channel' && (
          <ChatView
            key={r.channel}
            client={client}
            channel={r.channel}
            {...(r.thread === undefined ? {} : { thread: r.thread })}
          />
        )}
        {r.view === 'fleet' && <FleetView client={client} />}
        {r.view === 'audit' && <AuditView client={client} />}
      </div>
    </div>
  )
}

function useWide(): boolean {
  const wide = useSignal(matchMedia('(min-width: 800px)').matches)
  useEffect(() => {
    const q = matchMedia('(min-width: 800px)')
    const on = () => (wide.value = q.matches)
    q.addEventListener('change', on)
    return () => q.removeEventListener('change', on)
  }, [])
  return wide.value
}

function TopBar({ client }: { client: FleetClient }) {
  const r = route.value
  const links = client.links.value
  void client.model.revision.value
  const sealed = client.model.e2e.encrypts()
  const live = links.filter((l) => l.state === 'live').length
  const status =
    live > 0
      ? `live on ${live} hub${live === 1 ? '' : 's'}`
      : links.some(
            (l) =>
              l.state === 'connecting' || l.state === 'authenticating' || l.state === 'catching-up',
          )
        ? 'connecting…'
        : 'offline'
  return (
    <header class="topbar">
      {r.view !== 'home' && (
        <a class="back narrow-only" href="#/" aria-label="Channels">
          ‹
        </a>
      )}
      <a class="brand" href="#/">
        Kith
      </a>
      <span class="fleet-name">{client.device.record.ownerName}'s fleet</span>
      <span
        class={`status ${live > 0 ? 'ok' : 'warn'}`}
        title={links.map((l) => `${l.url}: ${l.state}${l.error ? ` (${l.error})` : ''}`).join('\n')}
      >
        {status}
      </span>
      {sealed && (
        <span
          class="status sealed"
          title="End-to-end encrypted (kith-e2e/1): hubs and relays carry only ciphertext"
        >
          sealed
        </span>
      )}
      <nav>
        <a href="#/" class={r.view === 'channel' || r.view === 'home' ? 'active' : ''}>
          Chat
        </a>
        <a href={href({ view: 'fleet' })} class={r.view === 'fleet' ? 'active' : ''}>
          Fleet
        </a>
        <a href={href({ view: 'audit' })} class={r.view === 'audit' ? 'active' : ''}>
          Audit
        </a>
      </nav>
    </header>
  )
}

function ChannelList({ client }: { client: FleetClient }) {
  const m = client.model
  void m.revision.value
  const r = route.value
  const current = r.view === 'channel' ? r.channel : undefined
  const draft = useSignal('')
  const error = useSignal<string | undefined>(undefined)
  const names = new Set(m.channels())
  if (current !== undefined) names.add(current)
  const read = client.lastRead.value
  return (
    <aside class="channels">
      <h2>Channels</h2>
      <ul>
        {[...names].sort().map((c) => {
          const unread = c === current ? 0 : m.unread(c, read[c] ?? 0)
          return (
            <li key={c}>
              <a href={href({ view: 'channel', channel: c })} class={c === current ? 'active' : ''}>
                <span class="hash">#</span>
                {c}
                {m.state.channels.isPrivate(c, Date.now() / 1000) && (
                  <span class="lock">private</span>
                )}
                {unread > 0 && (
                  <span class="badge" aria-label={`${unread} unread`}>
                    {unread}
                  </span>
                )}
              </a>
            </li>
          )
        })}
      </ul>
      <form
        class="open-channel"
        onSubmit={(e) => {
          e.preventDefault()
          const name = draft.value.trim().replace(/^#/, '').toLowerCase()
          if (!isChannelName(name)) {
            error.value = 'A channel name is 1-64 of a-z 0-9 _ . - (e.g. ops)'
            return
          }
          error.value = undefined
          draft.value = ''
          go({ view: 'channel', channel: name })
        }}
      >
        <input
          aria-label="Open a channel"
          placeholder="#channel"
          value={draft.value}
          onInput={(e) => (draft.value = e.currentTarget.value)}
        />
        <button type="submit" class="secondary">
          Open
        </button>
      </form>
      {error.value !== undefined && <p class="error">{error.value}</p>}
    </aside>
  )
}
