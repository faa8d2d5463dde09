import { fleetPeople, type GrantVerifier, type MemberKey } from '../../../browser-core.js'
import type { FleetClient } from '../lib/fleet-client.js'
import { shortNpub, when } from './format.js'
import { NotifySettings } from './notify.js'
import { SessionsView } from './sessions.js'

/** What a key's grant lets it do: kinds, channels, window, delegation. */
function caps(v: GrantVerifier, key: MemberKey): string {
  const newest = v
    .allGrants()
    .filter((g) => g.subject === key.pubkey)
    .sort((a, b) => b.createdAt - a.createdAt)[0]
  if (newest === undefined) return 'everything (the founder)'
  const parts = [
    newest.kinds === undefined ? 'all kinds' : `kinds ${newest.kinds.join(', ')}`,
    newest.channels === undefined ? 'all channels' : newest.channels.map((c) => `#${c}`).join(' '),
  ]
  if (newest.exp !== undefined) parts.push(`until ${when(newest.exp)}`)
  if (key.deleg) parts.push(key.role === 'owner' ? 'may admit people' : 'may grant agents')
  return parts.join(' · ')
}

/** A device not online: when it was last seen by this page, if at all. */
function seen(at: number | undefined): string {
  return at === undefined ? 'no presence seen' : `seen ${when(at)}`
}

/**
 * The fleet: its people, their devices and agents, with their state (a device's presence, an
 * agent's work as seen from its prompts and cards) and what each key's grant allows.
 */
export function FleetView({ client }: { client: FleetClient }) {
  const m = client.model
  void m.revision.value
  const v = m.state.grants
  const now = Math.floor(Date.now() / 1000)
  const people = fleetPeople(v, now)
  const key = (k: MemberKey, kind: 'device' | 'agent') => {
    const who = m.who(k.pubkey)
    const active = k.status === 'active'
    const state = !active
      ? k.status
      : kind === 'agent'
        ? m.hostOf(k.pubkey) !== undefined && !m.online(m.hostOf(k.pubkey)!)
          ? 'host offline'
          : m.agentState(k.pubkey)
        : k.pubkey === client.me
          ? 'this browser'
          : m.online(k.pubkey)
            ? 'online'
            : seen(m.lastSeen(k.pubkey))
    return (
      <li key={k.pubkey} class={`key ${kind} ${active ? '' : 'gone'}`}>
        <span class="name">{who.name}</span>
        <span class={`state ${state.replace(/\s/g, '-')}`}>{state}</span>
        <span class="npub muted">{shortNpub(k.pubkey)}</span>
        <span class="caps muted">{caps(v, k)}</span>
      </li>
    )
  }
  return (
    <main class="fleet">
      <h2>The fleet</h2>
      {people.map((p) => (
        <section key={p.pubkey} class={`person ${p.status === 'active' ? '' : 'gone'}`}>
          <h3>
            {m.who(p.pubkey).name}{' '}
            <span class="muted">
              {p.role === 'founder' ? 'founder' : p.admin ? 'admin' : 'member'}
              {p.status === 'active' ? '' : ` · ${p.status}`} · {shortNpub(p.pubkey)}
            </span>
          </h3>
          <ul>
            {p.devices.map((d) => (
              <>
                {key(d, 'device')}
                {d.agents.length > 0 && (
                  <ul class="agents">{d.agents.map((a) => key(a, 'agent'))}</ul>
                )}
              </>
            ))}
            {p.agents.map((a) => key(a, 'agent'))}
          </ul>
        </section>
      ))}
      <p class="muted note">
        Who may prompt an agent and who may answer its cards (its allow and approvers policies) is
        kept by the node that hosts it and is not published: by default, only its owner's devices. A
        refused prompt or answer gets a reply that names the policy.
      </p>
      <SessionsView client={client} />
      <NotifySettings client={client} />
    </main>
  )
}
