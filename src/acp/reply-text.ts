/**
 * A turn's reply, assembled from its session/update stream: the text of its
 * `agent_message_chunk`s, in order. Runs of message text that other updates (a thought, a tool
 * call, a plan) came between are separate paragraphs, so "Let me check." and the answer after
 * the tool call do not run together; and a first chunk that is a notice rather than the answer
 * (codex-acp sends its configuration warnings as message text at the start of a turn) stands
 * apart: one that begins with "⚠" or "warning", or a whole sentence that the next chunk is glued
 * to with no space ("…cause issues.The build is green").
 */
export class ReplyText {
  private readonly parts: string[] = []
  private current = ''
  /** Another kind of update came since the last message chunk. */
  private interrupted = false
  private first = true
  /** The next chunk is the turn's second (the first was the answer's start, not a warning). */
  private second = false

  add(update: unknown): void {
    const u = update as { sessionUpdate?: unknown; content?: { type?: unknown; text?: unknown } }
    if (u.sessionUpdate !== 'agent_message_chunk') {
      if (typeof u.sessionUpdate === 'string' && breaking.has(u.sessionUpdate))
        this.interrupted = true
      return
    }
    if (u.content?.type !== 'text' || typeof u.content.text !== 'string') return
    const text = u.content.text
    if (this.interrupted && this.current.trim() !== '') this.cut()
    this.interrupted = false
    if (this.first && /^\s*(⚠|warning\b)/i.test(text) && !/\n\s*$/.test(text)) {
      this.current = text
      this.cut()
    } else if (this.second && /[.!?)]$/.test(this.current) && /^[A-Z`#*]/.test(text)) {
      // A whole first sentence, then one glued to it with no space: two messages (a notice
      // from the adapter, then the model's answer), not one sentence running on.
      this.cut()
      this.current = text
    } else this.current += text
    this.second = this.first && this.current !== ''
    this.first = false
  }

  private cut(): void {
    this.parts.push(this.current)
    this.current = ''
  }

  get text(): string {
    const parts = [...this.parts, this.current].filter((p) => p.trim() !== '')
    if (parts.length <= 1) return parts[0] ?? this.current
    return parts.map((p, i) => (i < parts.length - 1 ? p.replace(/\s+$/, '') : p)).join('\n\n')
  }
}

/** Updates that end a run of message text (what an agent does between two things it says). */
const breaking = new Set(['agent_thought_chunk', 'tool_call', 'tool_call_update', 'plan'])
