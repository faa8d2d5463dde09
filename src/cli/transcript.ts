import type { WatchFrame } from '../node/observer-frames.js'
import { reviewLines } from './review-lines.js'

/** A session/update as `kith watch` and `kith chat` read it (ACP, or an entry the host adds). */
export interface Update {
  sessionUpdate?: string
  content?: { type?: string; text?: string }
  title?: string
  status?: string
  toolCallId?: string
  entries?: { content?: string; status?: string }[]
  toolKind?: string
  policy?: string
  /** kith_turn: started or ended; ended says how. */
  state?: string
  outcome?: string
}

/** One line for an update that is not streamed text, for a person; undefined: nothing to say. */
export function describeUpdate(u: Update): string | undefined {
  switch (u.sessionUpdate) {
    case 'agent_message_chunk':
      return u.content?.text
    case 'agent_thought_chunk':
      return `… ${u.content?.text ?? ''}`
    case 'tool_call':
      return `⚙ ${u.title ?? u.toolCallId ?? 'tool'} (${u.status ?? 'pending'})`
    case 'tool_call_update':
      return `⚙ ${u.title ?? u.toolCallId ?? 'tool'} → ${u.status ?? 'updated'}`
    case 'plan':
      return `plan: ${(u.entries ?? []).map((e) => `[${e.status ?? ' '}] ${e.content ?? ''}`).join('; ')}`
    case 'kith_auto_allowed':
      return `✓ ${u.toolKind ?? 'tool'} "${u.title ?? u.toolCallId ?? 'tool'}" allowed by policy (permissions: ${u.policy ?? '?'})`
    case 'kith_turn':
      return u.state === 'started'
        ? '▶ turn started'
        : `■ turn ended${u.outcome === undefined ? '' : ` (${u.outcome})`}`
    default:
      return undefined
  }
}

interface Stream {
  prefix: string
  kind: 'message' | 'thought'
  text: string
  at: number
}

/**
 * An agent's side transcript as lines: streamed message and thought chunks are gathered into
 * whole lines (an agent streams a few words per chunk), each other update is a line of its own,
 * and a half line is printed when something else comes, when its turn ends, or after a quiet
 * spell (`flushQuiet`). Pure: the caller prints the lines and runs the clock.
 */
export class TranscriptLines {
  private readonly streams = new Map<string, Stream>()
  /** Tool calls' titles, so an update that names only the call's id still reads as its title. */
  private readonly titles = new Map<string, string>()

  frame(frame: WatchFrame, nowMs: number): string[] {
    const prefix = `${frame.agent.name} #${frame.channel}: `
    const key = `${frame.agent.pubkey}:${frame.prompt}`
    const out: string[] = []
    for (const raw of frame.updates) {
      const u = raw as Update
      const kind =
        u.sessionUpdate === 'agent_message_chunk'
          ? 'message'
          : u.sessionUpdate === 'agent_thought_chunk'
            ? 'thought'
            : undefined
      if (kind !== undefined) {
        const text =
          u.content?.type === 'text' || u.content?.type === undefined ? u.content?.text : ''
        if (typeof text !== 'string' || text === '') continue
        let s = this.streams.get(key)
        if (s !== undefined && s.kind !== kind) {
          out.push(...this.end(key))
          s = undefined
        }
        s ??= { prefix, kind, text: '', at: nowMs }
        s.text += text
        s.at = nowMs
        this.streams.set(key, s)
        let i
        while ((i = s.text.indexOf('\n')) >= 0) {
          out.push(...this.lineOf(s, s.text.slice(0, i)))
          s.text = s.text.slice(i + 1)
        }
        continue
      }
      out.push(...this.end(key))
      let line: string | undefined
      if (u.sessionUpdate === 'tool_call' || u.sessionUpdate === 'tool_call_update') {
        const id = `${key}:${u.toolCallId ?? ''}`
        if (u.title !== undefined) this.titles.set(id, u.title)
        // Bounded: a watch left open for days must not grow without end.
        if (this.titles.size > 5000) this.titles.delete(this.titles.keys().next().value!)
        const title = u.title ?? this.titles.get(id)
        // An edit's diffs and a tool's output are shown for review under its line.
        const review = reviewLines(raw as Record<string, unknown>, title)
        if (review !== undefined) {
          out.push(...review.map((l) => `${prefix}${l}`))
          continue
        }
        line = describeUpdate(title === undefined ? u : { ...u, title })
      } else {
        // A plan as a checklist, usage as one line.
        const review = reviewLines(raw as Record<string, unknown>, undefined)
        if (review !== undefined) {
          out.push(...review.map((l) => `${prefix}${l}`))
          continue
        }
        line = describeUpdate(u)
      }
      if (line !== undefined) out.push(`${prefix}${line}`)
    }
    return out
  }

  /** Half lines nothing was added to for `quietMs`. */
  flushQuiet(nowMs: number, quietMs: number): string[] {
    const out: string[] = []
    for (const [key, s] of this.streams) if (nowMs - s.at >= quietMs) out.push(...this.end(key))
    return out
  }

  /** Everything still gathered. */
  flushAll(): string[] {
    return [...this.streams.keys()].flatMap((k) => this.end(k))
  }

  private end(key: string): string[] {
    const s = this.streams.get(key)
    if (s === undefined) return []
    this.streams.delete(key)
    return this.lineOf(s, s.text)
  }

  private lineOf(s: Stream, text: string): string[] {
    if (text.trim() === '') return []
    return [`${s.prefix}${s.kind === 'thought' ? '… ' : ''}${text.replace(/\s+$/, '')}`]
  }
}
