import { isNotice, threadOf, type NostrEvent } from '../../../browser-core.js'
import { renderMarkdown } from '../lib/markdown.js'
import type { FleetClient } from '../lib/fleet-client.js'
import { roleLabel, when } from './format.js'
import { href, route } from './route.js'

/** One chat message: who (always whose), when, its text as sanitized markdown, its thread. */
export function Message({
  client,
  event,
  onReply,
  inThread = false,
}: {
  client: FleetClient
  event: NostrEvent
  onReply: (id: string) => void
  /** Shown in a thread pane: no quote of the parent, no link to the thread. */
  inThread?: boolean
}) {
  const m = client.model
  const who = m.who(event.pubkey)
  const { root, parent } = threadOf(event)
  const parentEvent = parent === undefined ? undefined : m.event(parent)
  const r = route.value
  const replies = root === undefined ? m.threadSize(event.id) : 0
  const out = client.outbox.value.get(event.id)
  const mine = event.pubkey === client.me
  const channel = r.view === 'channel' ? r.channel : ''
  return (
    <article
      class={`message ${who.role} ${mine ? 'mine' : ''} ${isNotice(event) ? 'notice' : ''}`}
      data-id={event.id}
    >
      <header>
        <span class="author">{who.name}</span>
        <span class="role">{mine ? 'this browser' : roleLabel(who)}</span>
        <time dateTime={new Date(event.created_at * 1000).toISOString()}>
          {when(event.created_at)}
        </time>
      </header>
      {parentEvent !== undefined && !inThread && (
        <p class="quote">
          ↳ {m.who(parentEvent.pubkey).name}: {parentEvent.content.slice(0, 80)}
        </p>
      )}
      <div class="body" dangerouslySetInnerHTML={{ __html: renderMarkdown(event.content) }} />
      <footer>
        <button type="button" class="link" onClick={() => onReply(event.id)}>
          Reply
        </button>
        {!inThread && root !== undefined && (
          <a href={href({ view: 'channel', channel, thread: root })}>thread</a>
        )}
        {!inThread && replies > 0 && (
          <a href={href({ view: 'channel', channel, thread: event.id })}>{replies} in thread</a>
        )}
        {out?.state === 'queued' && <span class="queued">queued, not yet on a hub</span>}
        {out?.state === 'refused' && (
          <span class="error">
            refused: {out.message}{' '}
            <button type="button" class="link" onClick={() => void client.dismiss(event.id)}>
              dismiss
            </button>
          </span>
        )}
      </footer>
    </article>
  )
}
