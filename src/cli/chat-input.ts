/**
 * Lines typed or pasted into `kith chat`, gathered into messages (pure). A paste is one message,
 * however many lines it has: a terminal in bracketed-paste mode wraps it in ESC[200~ … ESC[201~
 * (`kith chat` turns that mode on). On a terminal the caller says when a paste is under way
 * (readline reports the markers as keys); on other input the markers arrive in the text. A line
 * typed with a trailing backslash goes on in the next line, as in a shell. The message is sent
 * by the first line that ends outside a paste and without a backslash (the Enter after a paste).
 */

export const pasteStart = '\u001b[200~'
export const pasteEnd = '\u001b[201~'

export interface DraftStep {
  /** The message, complete: send it. */
  send?: string
  /** Lines gathered so far and not yet sent. */
  waiting: number
}

export class MessageDraft {
  private lines: string[] = []
  /** A paste whose start marker came in the text and whose end has not. */
  private inPaste = false

  /** One input line; `pasting`: the terminal says it is part of a paste. */
  line(raw: string, pasting = false): DraftStep {
    let text = raw
    let ended = false
    if (text.includes(pasteStart)) {
      this.inPaste = true
      text = text.split(pasteStart).join('')
    }
    if (text.includes(pasteEnd)) {
      this.inPaste = false
      ended = true
      text = text.split(pasteEnd).join('')
    }
    if (pasting || this.inPaste) {
      this.lines.push(text)
      return { waiting: this.lines.length }
    }
    if (!ended && /(^|[^\\])\\$/.test(text)) {
      this.lines.push(text.slice(0, -1))
      return { waiting: this.lines.length }
    }
    this.lines.push(text)
    const message = this.lines
      .join('\n')
      .replace(/^\s*\n/, '')
      .replace(/\s+$/, '')
    this.lines = []
    return message.trim() === '' ? { waiting: 0 } : { send: message, waiting: 0 }
  }

  /** Lines gathered and not yet sent. */
  get waiting(): number {
    return this.lines.length
  }

  /** Drops what was gathered; returns how many lines. */
  clear(): number {
    const n = this.lines.length
    this.lines = []
    this.inPaste = false
    return n
  }
}
