import type { ChatItem } from '../../node/chat-store.js'
import { renderMarkdown, visibleWidth, wrap } from '../terminal-text.js'

const time = (s: number) => new Date(s * 1000).toISOString().slice(11, 16)

interface PermissionContent {
  title?: string
  toolKind?: string
  options?: { optionId: string; name: string; kind?: string }[]
  sensitive?: string
  preview?: string
  previewBytes?: number
  /** N people must allow it (kith-agents "Quorum"); the tally comes as notices in its thread. */
  quorum?: { n?: number; for?: string[] }
}

/** Lines of a card's preview `kith chat` shows before it says how many more `kith permit` shows. */
const previewChatLines = 20

/**
 * A card's preview (what the call will do: a diff, a command and its cwd, a path) as indented
 * lines; at most `max` lines, then how many more there are. Control characters from the agent's
 * side (a file's escape sequences in a diff) are shown as �, never sent to the terminal.
 */
export function previewLines(
  preview: string | null | undefined,
  opts: { indent: number; max?: number; more?: string },
): string[] {
  if (preview === undefined || preview === null || preview === '') return []
  // eslint-disable-next-line no-control-regex
  const lines = preview.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '�').split('\n')
  const pad = ' '.repeat(opts.indent)
  const max = opts.max ?? Number.POSITIVE_INFINITY
  const shown = lines.slice(0, max).map((l) => `${pad}│ ${l}`)
  if (lines.length > max)
    shown.push(
      `${pad}│ … ${lines.length - max} more lines${opts.more === undefined ? '' : `: ${opts.more}`}`,
    )
  return shown
}

/** A permission request's content as far as it can be read (nothing when it cannot). */
export function permissionContent(item: ChatItem): PermissionContent {
  return parseJson<PermissionContent>(item.event.content) ?? {}
}

function parseJson<T>(text: string): T | undefined {
  try {
    return JSON.parse(text) as T
  } catch {
    // Not ours to render: shown as it is.
    return undefined
  }
}

/**
 * The author as shown: a person as a person; a device or agent always with the person it belongs
 * to (unless that is this node's own person: then "you"), so no name passes for another person's.
 */
export function authorLabel(from: ChatItem['from']): string {
  if (from.role === 'agent')
    return `${from.name} [agent, authorized by ${from.mine ? 'you' : (from.authorizedBy ?? '?')}]`
  if (from.role === 'device')
    return from.mine ? `${from.name} [device]` : `${from.name} [device of ${from.person ?? '?'}]`
  if (from.role === 'unknown') return from.name
  return `${from.name} [${from.role}]`
}

/** How chat lines are laid out: the terminal's width (none: no wrapping) and its colors. */
export interface Layout {
  width?: number
  color?: boolean
}

/** The layout for this process's stdout: its width and colors on a TTY; none in a pipe. */
export function stdoutLayout(): Layout {
  // Not a terminal: no colors, and no wrapping unless COLUMNS asks for a width.
  if (process.stdout.isTTY !== true) {
    const columns = Number(process.env.COLUMNS)
    return Number.isInteger(columns) && columns >= 20 ? { width: columns } : {}
  }
  return {
    width: process.stdout.columns > 0 ? process.stdout.columns : 80,
    color: process.env.NO_COLOR === undefined,
  }
}

/** Continuation lines start under the text, past the time column ("HH:MM "). */
const hang = 6

/**
 * A message's text under its header: on the header's line when it is one short line, otherwise
 * below it with a hanging indent, wrapped at word boundaries (agents' answers rendered from
 * markdown). `suffix` follows a one-line text; `lead` heads a text set below the header.
 */
function layoutText(
  header: string,
  text: string,
  markdown: boolean,
  layout: Layout,
  given: string,
): string {
  let quote = given
  const color = layout.color === true
  const width = layout.width ?? Number.POSITIVE_INFINITY
  const body = Math.max(20, width - hang)
  const rendered = markdown
    ? renderMarkdown(text, { width: Number.isFinite(body) ? body : 100_000, color })
    : text
        .split('\n')
        .flatMap((l) =>
          Number.isFinite(body) ? wrap(l, body, Math.min(/^\s*/.exec(l)![0].length, 8)) : [l],
        )
  const lines = rendered.length === 0 ? [''] : rendered
  const dim = (t: string) => (color ? `\u001b[2m${t}\u001b[22m` : t)
  const tail = quote === '' ? '' : `  ${dim(`· ${quote}`)}`
  if (
    lines.length === 1 &&
    visibleWidth(header) + visibleWidth(lines[0]!) + visibleWidth(tail) <= width
  )
    return `${header}${lines[0]}${tail}`
  const pad = ' '.repeat(hang)
  // The quote in the header is cut to the width: it is a pointer, not the text.
  if (quote !== '' && Number.isFinite(width)) {
    const room = width - visibleWidth(header) - 1
    if (visibleWidth(quote) > room)
      quote = room < 12 ? '' : `${[...quote].slice(0, Math.max(0, room - 1)).join('')}…`
  }
  return [
    `${header}${quote === '' ? '' : dim(quote)}`.replace(/\s+$/, ''),
    ...lines.map((l) => (l === '' ? '' : `${pad}${l}`)),
  ].join('\n')
}

/**
 * A chat message, a permission card (4142) or a decision (4143), laid out for a terminal (one
 * line, or a header and indented lines). `card`: the number `kith chat` gave the card, which
 * `/allow N` names.
 */
export function formatChat(
  item: ChatItem,
  opts: {
    channel?: boolean
    card?: number
    /** The card a decision answers, as `kith chat` numbered it. */
    answered?: (request: string) =>
      | {
          card: number
          agent: string
          title: string
          options: { optionId: string; name: string }[]
        }
      | undefined
  } & Layout = {},
): string {
  const from = item.from
  const channel = opts.channel && item.channel ? `#${item.channel} ` : ''
  const head = `${time(item.event.created_at)} ${channel}`
  if (item.event.kind === 4142) {
    const p = permissionContent(item)
    const options = (p.options ?? []).map((o, i) => `[${i + 1}] ${o.name}`).join('  ')
    const id = item.event.id.slice(0, 8)
    const card = opts.card === undefined ? '' : `[card ${opts.card}] `
    const answer =
      opts.card === undefined
        ? `→ kith permit ${id} OPTION`
        : `→ /allow ${opts.card} (or /allow ${opts.card} OPTION, /reject ${opts.card})`
    const sensitive = p.sensitive === undefined ? '' : `  ⚠ ${p.sensitive}`
    const asked =
      item.inReplyTo === undefined ? '' : `· for ${item.inReplyTo.name}: ${item.inReplyTo.text}`
    const width = opts.width ?? Number.POSITIVE_INFINITY
    const second = `${options}  ${answer}  (request ${id})`
    const lines = [
      `${head}🔐 ${card}${from.name} asks to run: ${p.title ?? '?'} (${p.toolKind ?? 'tool'})${sensitive}`,
      ...(typeof p.quorum?.n === 'number'
        ? [
            `${' '.repeat(hang)}👥 needs ${p.quorum.n} people to allow it (two devices of one person count once); the tally follows`,
          ]
        : []),
      ...previewLines(typeof p.preview === 'string' ? p.preview : undefined, {
        indent: hang,
        max: previewChatLines,
        more: `kith permit shows all`,
      }),
      ...(Number.isFinite(width) ? wrap(second, width - hang, 2) : [second]).map(
        (l) => `${' '.repeat(hang)}${l}`,
      ),
    ]
    // What asked: beside the options when it fits, else left out (the prompt is shown above).
    if (asked !== '' && visibleWidth(lines.at(-1)!) + 2 + visibleWidth(asked) <= width)
      lines[lines.length - 1] += `  ${asked}`
    return lines.join('\n')
  }
  if (item.event.kind === 4143) {
    const d = parseJson<{ optionId?: string }>(item.event.content) ?? {}
    const request = item.event.tags.find((t) => t[0] === 'e')?.[1] ?? '?'
    const answered = opts.answered?.(request)
    if (answered !== undefined) {
      const option =
        answered.options.find((o) => o.optionId === d.optionId)?.name ?? d.optionId ?? '?'
      return `${head}✔ ${from.name} answered [card ${answered.card}] (${answered.agent}: ${answered.title}): ${option}`
    }
    return `${head}✔ ${from.name} answered request ${request.slice(0, 8)}: ${d.optionId ?? '?'}`
  }
  const reply = item.event.tags.some((t) => t[0] === 'e') ? '↳ ' : ''
  const quote =
    item.inReplyTo === undefined ? '' : `re ${item.inReplyTo.name}: ${item.inReplyTo.text}`
  return layoutText(
    `${head}${authorLabel(from)}: ${reply}`,
    item.event.content,
    from.role === 'agent',
    opts,
    quote,
  )
}
