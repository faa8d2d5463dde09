import DOMPurify from 'dompurify'
import { Marked } from 'marked'

/**
 * Agent answers (and messages) as markdown: parsed by marked (GFM: code blocks, tables, lists),
 * then sanitized by DOMPurify. Nothing it yields loads from another origin: images become links,
 * and no style, form, frame or script survives; links open in a new tab without a referrer.
 */
const marked = new Marked({
  gfm: true,
  breaks: true,
  async: false,
  renderer: {
    // A diff block shows its removed and added lines marked (del / ins survive sanitizing).
    code({ text, lang }) {
      if (lang !== 'diff') return false
      const lines = text.split('\n').map((line) => {
        const t = escapeText(line)
        if (line.startsWith('+') && !line.startsWith('+++')) return `<ins>${t}</ins>`
        if (line.startsWith('-') && !line.startsWith('---')) return `<del>${t}</del>`
        return `${t}\n`
      })
      return `<pre><code>${lines.join('')}</code></pre>\n`
    },
    image({ href, text }) {
      const label = text === '' ? href : text
      return `<a href="${escapeAttr(href)}">[image: ${escapeText(label)}]</a>`
    },
  },
})

function escapeText(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}
const escapeAttr = escapeText

let hooked = false

function hook(): void {
  if (hooked) return
  hooked = true
  DOMPurify.addHook('afterSanitizeAttributes', (node) => {
    if (node.tagName === 'A') {
      node.setAttribute('target', '_blank')
      node.setAttribute('rel', 'noopener noreferrer nofollow')
    }
  })
}

/** Text with nothing markdown would change: shown as it is (the common chat line). */
const plainText = /^[^`*_#[\]<>&|~\\!\n]*$/
/** Rendered messages, by their text: an event's content never changes. */
const rendered = new Map<string, string>()
const renderedMax = 2000

/** Markdown to safe HTML. */
export function renderMarkdown(text: string): string {
  if (plainText.test(text) && !/^\s*([-+]\s|\d+\.\s)/.test(text) && !/https?:/.test(text))
    return escapeText(text)
  const hit = rendered.get(text)
  if (hit !== undefined) return hit
  const html = sanitize(text)
  if (rendered.size >= renderedMax) rendered.delete(rendered.keys().next().value!)
  rendered.set(text, html)
  return html
}

function sanitize(text: string): string {
  hook()
  const html = marked.parse(text) as string
  return DOMPurify.sanitize(html, {
    FORBID_TAGS: [
      'img',
      'style',
      'form',
      'input',
      'button',
      'iframe',
      'svg',
      'math',
      'video',
      'audio',
      'source',
      'picture',
      'object',
      'embed',
    ],
    FORBID_ATTR: ['style', 'class', 'id'],
    ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i,
  })
}
