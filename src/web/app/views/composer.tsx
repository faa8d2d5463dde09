import { useSignal } from '@preact/signals'
import { useRef } from 'preact/hooks'
import type { FleetClient } from '../lib/fleet-client.js'
import { roleLabel } from './format.js'

/** The @name being typed before the caret, if any. */
function mentionAt(text: string, caret: number): { start: number; query: string } | undefined {
  const m = /(?:^|[^\w@])@([\w/-]{0,64})$/.exec(text.slice(0, caret))
  if (m === null) return undefined
  return { start: caret - m[1]!.length - 1, query: m[1]!.toLowerCase() }
}

/**
 * Writing a message: Enter sends (Shift+Enter for a new line), @ completes the names of agents,
 * devices and people (as they resolve for this device), a reply is threaded, and "interrupt"
 * asks the mentioned agents to stop their running turn and take this one next.
 */
export function Composer({
  client,
  channel,
  replyTo,
  onClearReply,
  inThread = false,
}: {
  client: FleetClient
  channel: string
  replyTo: string | undefined
  onClearReply: () => void
  inThread?: boolean
}) {
  const m = client.model
  const text = useSignal('')
  const caret = useSignal(0)
  const interrupt = useSignal(false)
  const error = useSignal<string | undefined>(undefined)
  const pick = useSignal(0)
  const area = useRef<HTMLTextAreaElement>(null)
  const mention = mentionAt(text.value, caret.value)
  const candidates =
    mention === undefined
      ? []
      : m
          .mentionable()
          .filter(
            (c) =>
              c.pubkey !== client.me &&
              (c.handle.toLowerCase().startsWith(mention.query) ||
                c.who.name.toLowerCase().startsWith(mention.query)),
          )
          .slice(0, 8)
  const parent = replyTo === undefined ? undefined : m.event(replyTo)

  const complete = (handle: string) => {
    if (mention === undefined) return
    const before = text.value.slice(0, mention.start)
    const after = text.value.slice(caret.value)
    const next = `${before}@${handle} ${after}`
    const at = before.length + handle.length + 2
    // The textarea's value and caret are set now, in the key's own handler: set in a later frame,
    // they moved the caret back under keys typed in between (a slow phone, a busy tab).
    const el = area.current
    if (el !== null) {
      el.value = next
      el.focus()
      el.setSelectionRange(at, at)
    }
    text.value = next
    caret.value = at
    pick.value = 0
  }

  const send = () => {
    let body = text.value.trim()
    if (body === '') return
    let asInterrupt = interrupt.value
    if (body.startsWith('/interrupt ')) {
      asInterrupt = true
      body = body.slice('/interrupt '.length).trim()
    }
    error.value = undefined
    client
      .post(channel, body, {
        ...(replyTo === undefined ? {} : { reply: replyTo }),
        ...(asInterrupt ? { interrupt: true } : {}),
      })
      .then(
        () => {
          text.value = ''
          caret.value = 0
          interrupt.value = false
          if (!inThread) onClearReply()
        },
        (err: unknown) => (error.value = err instanceof Error ? err.message : String(err)),
      )
  }

  return (
    <form
      class="composer"
      onSubmit={(e) => {
        e.preventDefault()
        send()
      }}
    >
      {parent !== undefined && !inThread && (
        <p class="replying">
          Replying to {m.who(parent.pubkey).name}: {parent.content.slice(0, 60)}{' '}
          <button type="button" class="link" onClick={onClearReply} aria-label="Cancel the reply">
            ✕
          </button>
        </p>
      )}
      {candidates.length > 0 && (
        <ul class="mentions" role="listbox" aria-label="Mention">
          {candidates.map((c, i) => (
            <li
              key={c.pubkey}
              role="option"
              aria-selected={i === pick.value}
              class={i === pick.value ? 'picked' : ''}
              onMouseDown={(e) => {
                e.preventDefault()
                complete(c.handle)
              }}
            >
              <span class="handle">@{c.handle}</span> <span class="muted">{roleLabel(c.who)}</span>
            </li>
          ))}
        </ul>
      )}
      <div class="compose-row">
        <textarea
          ref={area}
          rows={1}
          aria-label={inThread ? 'Reply in thread' : `Message #${channel}`}
          placeholder={`Message #${channel} (@ to mention)`}
          value={text.value}
          onInput={(e) => {
            const el = e.currentTarget
            text.value = el.value
            caret.value = el.selectionStart
            pick.value = 0
          }}
          onKeyUp={(e) => (caret.value = e.currentTarget.selectionStart)}
          onClick={(e) => (caret.value = e.currentTarget.selectionStart)}
          onKeyDown={(e) => {
            if (candidates.length > 0) {
              if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
                e.preventDefault()
                const n = candidates.length
                pick.value = (pick.value + (e.key === 'ArrowDown' ? 1 : n - 1)) % n
                return
              }
              if (e.key === 'Tab' || e.key === 'Enter') {
                e.preventDefault()
                complete(candidates[pick.value]!.handle)
                return
              }
            }
            if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
              e.preventDefault()
              send()
            }
          }}
        />
        <button type="submit" disabled={text.value.trim() === ''}>
          Send
        </button>
      </div>
      <label class="interrupt">
        <input
          type="checkbox"
          checked={interrupt.value}
          onChange={(e) => (interrupt.value = e.currentTarget.checked)}
        />{' '}
        interrupt the mentioned agent's turn
      </label>
      {error.value !== undefined && <p class="error">{error.value}</p>}
    </form>
  )
}
