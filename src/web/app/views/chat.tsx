import { useSignal } from '@preact/signals'
import { useEffect, useLayoutEffect, useRef } from 'preact/hooks'
import { Kind, type NostrEvent } from '../../../browser-core.js'
import type { FleetClient } from '../lib/fleet-client.js'
import { PermissionCard } from './card.js'
import { Composer } from './composer.js'
import { Message } from './message.js'
import { go } from './route.js'
import { TurnProgress } from './turn.js'

/** The agents a prompt mentions (its `p` tags that name agents). */
function promptedAgents(client: FleetClient, e: NostrEvent): string[] {
  if (e.kind !== Kind.ChatMessage || client.model.isAgent(e.pubkey)) return []
  return e.tags
    .filter((t) => t[0] === 'p' && t[1] !== undefined && client.model.isAgent(t[1]))
    .map((t) => t[1]!)
}

/** One channel: its timeline with cards and live turns, a composer, and a thread beside it. */
export function ChatView({
  client,
  channel,
  thread,
}: {
  client: FleetClient
  channel: string
  thread?: string
}) {
  const m = client.model
  void m.revision.value
  const events = m.timeline(channel)
  const replyTo = useSignal<string | undefined>(undefined)
  useEffect(() => {
    // What is on screen is read (the unread count of the channel drops).
    if (document.visibilityState === 'visible') void client.markRead(channel)
  }, [events.length, channel])
  const live = client.wasLive.value
  useEffect(() => {
    // Time to a usable chat (docs/performance.md): the channel is shown, caught up and live.
    if (live && performance.getEntriesByName('kith-chat-usable').length === 0)
      performance.mark('kith-chat-usable')
  }, [live])
  const privateChannel = m.state.channels.isPrivate(channel, Date.now() / 1000)
  const mayPost =
    !privateChannel || m.state.channels.isMember(client.me, channel, Date.now() / 1000)
  return (
    <div class={`chat ${thread === undefined ? '' : 'with-thread'}`}>
      <section class="timeline-pane" aria-label={`#${channel}`}>
        <div class="channel-head">
          <h2>
            #{channel} {privateChannel && <span class="lock">private</span>}
          </h2>
        </div>
        <Timeline client={client} events={events} onReply={(id) => (replyTo.value = id)} />
        {mayPost ? (
          <Composer
            client={client}
            channel={channel}
            replyTo={replyTo.value}
            onClearReply={() => (replyTo.value = undefined)}
          />
        ) : (
          <p class="muted composer-note">
            #{channel} is private and your person is not a member: ask its creator or an admin.
          </p>
        )}
      </section>
      {thread !== undefined && <ThreadPane client={client} channel={channel} root={thread} />}
    </div>
  )
}

function Timeline({
  client,
  events,
  onReply,
  inThread = false,
}: {
  client: FleetClient
  events: NostrEvent[]
  onReply: (id: string) => void
  inThread?: boolean
}) {
  const box = useRef<HTMLDivElement>(null)
  const atBottom = useRef(true)
  useLayoutEffect(() => {
    const el = box.current
    if (el !== null && atBottom.current) el.scrollTop = el.scrollHeight
  })
  if (events.length === 0)
    return (
      <div class="timeline empty" ref={box}>
        <p class="muted">Nothing here yet. Say something, or mention an agent (@name).</p>
      </div>
    )
  return (
    <div
      class="timeline"
      ref={box}
      onScroll={(e) => {
        const el = e.currentTarget
        atBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < 60
      }}
    >
      {events.map((e) =>
        e.kind === Kind.PermissionRequest ? (
          <PermissionCard key={e.id} client={client} id={e.id} />
        ) : (
          <div key={e.id} class="item">
            <Message client={client} event={e} onReply={onReply} inThread={inThread} />
            {promptedAgents(client, e).map((agent) => (
              <TurnProgress key={agent} client={client} prompt={e} agent={agent} />
            ))}
          </div>
        ),
      )}
    </div>
  )
}

function ThreadPane({
  client,
  channel,
  root,
}: {
  client: FleetClient
  channel: string
  root: string
}) {
  const m = client.model
  void m.revision.value
  const events = m.thread(root)
  const replyTo = useSignal<string | undefined>(root)
  return (
    <section class="thread-pane" aria-label="Thread">
      <div class="channel-head">
        <h2>Thread</h2>
        <button type="button" class="secondary" onClick={() => go({ view: 'channel', channel })}>
          Close
        </button>
      </div>
      <Timeline client={client} events={events} onReply={(id) => (replyTo.value = id)} />
      <Composer
        client={client}
        channel={channel}
        replyTo={replyTo.value ?? root}
        onClearReply={() => (replyTo.value = root)}
        inThread
      />
    </section>
  )
}
