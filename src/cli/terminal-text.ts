/**
 * Agents' answers rendered for a terminal (pure: no I/O). The subset of markdown agents use —
 * headings, emphasis, inline code, fenced code blocks, lists, quotes, links, rules — becomes
 * plain lines, wrapped at word boundaries to the terminal's width with a hanging indent (a list
 * item's continuation lines align under its text, not at column 0). Source line breaks are
 * kept: agents' plain-text answers rely on them. With `color`, emphasis, code and headings use
 * ANSI styles; without, their markers are dropped (code keeps its backticks) and nothing else
 * is added, so the text reads the same in a pipe or a log file.
 */

export interface RenderOptions {
  /** Columns available for the text (after any indent the caller adds). */
  width: number
  /** ANSI styles (a TTY that did not ask for NO_COLOR). */
  color: boolean
}

const esc = (code: string) => `\u001b[${code}m`
const style = {
  bold: (s: string) => `${esc('1')}${s}${esc('22')}`,
  italic: (s: string) => `${esc('3')}${s}${esc('23')}`,
  code: (s: string) => `${esc('36')}${s}${esc('39')}`,
  dim: (s: string) => `${esc('2')}${s}${esc('22')}`,
  underline: (s: string) => `${esc('4')}${s}${esc('24')}`,
}

// eslint-disable-next-line no-control-regex
const ansi = /\u001b\[[0-9;]*m/g

/** Columns a string takes on a terminal: ANSI styles take none, wide characters two. */
export function visibleWidth(text: string): number {
  let n = 0
  for (const ch of text.replace(ansi, '')) {
    const c = ch.codePointAt(0)!
    if (c < 32 || (c >= 0x300 && c <= 0x36f) || c === 0x200d || (c >= 0xfe00 && c <= 0xfe0f))
      continue
    n += isWide(c) ? 2 : 1
  }
  return n
}

function isWide(c: number): boolean {
  return (
    (c >= 0x1100 && c <= 0x115f) ||
    (c >= 0x2e80 && c <= 0xa4cf) ||
    (c >= 0xac00 && c <= 0xd7a3) ||
    (c >= 0xf900 && c <= 0xfaff) ||
    (c >= 0xfe30 && c <= 0xfe4f) ||
    (c >= 0xff00 && c <= 0xff60) ||
    (c >= 0xffe0 && c <= 0xffe6) ||
    (c >= 0x1f300 && c <= 0x1f64f) ||
    (c >= 0x1f900 && c <= 0x1f9ff) ||
    (c >= 0x20000 && c <= 0x3fffd)
  )
}

/**
 * Wraps `text` (one line, possibly styled) at word boundaries: the first line gets `width`
 * columns, the next ones `width - hang` after `hang` spaces. A word longer than a line is put on
 * a line of its own, whole (a URL cut in two cannot be copied).
 */
export function wrap(text: string, width: number, hang = 0): string[] {
  // The first line's own indent is kept; the others get `hang`.
  const lead = /^\s*/.exec(text)![0]
  const words = text
    .slice(lead.length)
    .split(/(\s+)/)
    .filter((w) => w !== '')
  const lines: string[] = []
  let line = lead
  let used = visibleWidth(lead)
  const limit = () => (lines.length === 0 ? width : Math.max(10, width - hang))
  for (const word of words) {
    const w = visibleWidth(word)
    if (/^\s+$/.test(word)) {
      if (line.trim() !== '') {
        line += word
        used += w
      }
      continue
    }
    if (line.trim() !== '' && used + w > limit()) {
      lines.push(line.replace(/\s+$/, ''))
      line = ''
      used = 0
    }
    line += word
    used += w
  }
  lines.push(line.replace(/\s+$/, ''))
  return lines.map((l, i) => (i === 0 ? l : `${' '.repeat(hang)}${l}`))
}

/** Inline markdown: code spans, links, strong and emphasis. */
export function renderInline(text: string, color: boolean): string {
  // Code spans first, kept out of the other rules.
  const spans: string[] = []
  let out = text.replace(/`([^`\n]+)`/g, (_, code: string) => {
    spans.push(color ? style.code(code) : `\`${code}\``)
    return `\u0000${spans.length - 1}\u0000`
  })
  out = out.replace(/\[([^\]\n]+)\]\(([^)\s]+)\)/g, (_, label: string, url: string) =>
    label === url ? url : `${label} (${url})`,
  )
  out = out.replace(/(\*\*|__)(?=\S)(.+?)(?<=\S)\1/g, (_, _m: string, inner: string) =>
    color ? style.bold(inner) : inner,
  )
  out = out.replace(
    /(^|[^\w*])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?![\w*])/g,
    (_, pre: string, inner: string) => `${pre}${color ? style.italic(inner) : inner}`,
  )
  out = out.replace(
    /(^|[^\w_])_(?=[^\s_])([^_\n]+?)(?<=[^\s_])_(?![\w_])/g,
    (_, pre: string, inner: string) => `${pre}${color ? style.italic(inner) : inner}`,
  )
  // eslint-disable-next-line no-control-regex
  return out.replace(/\u0000(\d+)\u0000/g, (_, i: string) => spans[Number(i)]!)
}

/** The lines of `markdown` rendered for a terminal `width` columns wide. */
export function renderMarkdown(markdown: string, opts: RenderOptions): string[] {
  const width = Math.max(20, opts.width)
  const out: string[] = []
  let fence: string | undefined
  for (const raw of markdown.replace(/\r\n?/g, '\n').split('\n')) {
    const line = raw.replace(/\t/g, '    ')
    const fenceMark = /^\s*(```+|~~~+)/.exec(line)?.[1]
    if (fence !== undefined) {
      if (
        fenceMark !== undefined &&
        fenceMark[0] === fence[0] &&
        fenceMark.length >= fence.length
      ) {
        fence = undefined
        continue
      }
      // Code is shown as it is, never wrapped (its line breaks mean something).
      out.push(`${opts.color ? style.dim('│') : '│'} ${opts.color ? style.code(line) : line}`)
      continue
    }
    if (fenceMark !== undefined) {
      fence = fenceMark
      continue
    }
    if (line.trim() === '') {
      out.push('')
      continue
    }
    const heading = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line)
    if (heading) {
      const text = renderInline(heading[2]!, opts.color)
      out.push(...wrap(opts.color ? style.bold(style.underline(text)) : text, width))
      continue
    }
    if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) {
      out.push('─'.repeat(Math.min(width, 40)))
      continue
    }
    if (/^\s*\|.*\|\s*$/.test(line)) {
      // Tables keep their columns: wrapping a row would break them.
      out.push(renderInline(line, opts.color))
      continue
    }
    const quote = /^\s{0,3}>\s?(.*)$/.exec(line)
    if (quote) {
      const bar = opts.color ? style.dim('│') : '│'
      for (const l of wrap(renderInline(quote[1]!, opts.color), width - 2)) out.push(`${bar} ${l}`)
      continue
    }
    const item = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/.exec(line)
    if (item) {
      const depth = Math.min(6, Math.floor(item[1]!.length / 2))
      const marker = /^\d/.test(item[2]!) ? item[2]! : '•'
      const lead = `${'  '.repeat(depth)}${marker} `
      const task = /^\[([ xX])\]\s+(.*)$/.exec(item[3]!)
      const body = task ? `${task[1] === ' ' ? '☐' : '☑'} ${task[2]}` : item[3]!
      out.push(...wrap(`${lead}${renderInline(body, opts.color)}`, width, visibleWidth(lead)))
      continue
    }
    // A plain line: its leading spaces are its own hanging indent.
    const indent = /^\s*/.exec(line)![0].length
    out.push(...wrap(renderInline(line, opts.color), width, Math.min(indent, width / 2)))
  }
  // Blank lines at the ends, and runs of them, say nothing on a terminal.
  const squeezed = out.filter((l, i) => l !== '' || (i > 0 && out[i - 1] !== ''))
  while (squeezed.length > 0 && squeezed[0] === '') squeezed.shift()
  while (squeezed.length > 0 && squeezed.at(-1) === '') squeezed.pop()
  return squeezed
}
