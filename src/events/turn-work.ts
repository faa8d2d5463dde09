import type { NostrEvent } from './event.js'
import { boundPreview } from './permission-preview.js'
import { diffLines } from './unified-diff.js'

/**
 * What an agent did in a turn, kept with its answer (kith-agents/1, "Work"): the turn's tool calls
 * with their final status, the diff of each edit and the end of each call's output, so a device
 * that was not watching (or a page reloaded) can check afterwards what ran and what changed.
 * Observer frames (24142) show it live but are never stored; these `work` tags of the agent's
 * reply are (sealed with the rest of it in a sealed fleet). Pure: the host records, clients read.
 */
export interface WorkTool {
  id: string
  title: string
  /** ACP tool kind. */
  kind: string
  /** Its last ACP status: pending, in_progress, completed, failed. */
  status: string
  /** The unified diff of its edits, bounded. */
  diff?: string
  /** The end of its text output, bounded. */
  output?: string
  /** Allowed by the host's policy without asking a person: the policy. */
  allowedBy?: string
}

/**
 * A call's diff and output end are cut to the first of these (UTF-8 bytes) whose tag fits
 * `workTagMaxBytes` (JSON escapes can double a text's size); else kept without them.
 */
const cuts: readonly [diff: number, output: number][] = [
  [2400, 1000],
  [1200, 400],
  [500, 150],
]
/** A tag item's JSON is kept within this (a hub refuses tag items over 4096 bytes). */
export const workTagMaxBytes = 4000
/** All of a reply's work tags together stay within this. */
export const workMaxBytes = 8192

const encoder = new TextEncoder()
const bytesOf = (text: string) => encoder.encode(text).length

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)

/** The end of `text` within `max` bytes, with a marker of what was left out before it. */
function tail(text: string, max: number): string {
  if (bytesOf(text) <= max) return text
  const chars = [...text]
  let used = 0
  let start = chars.length
  while (start > 0 && used + bytesOf(chars[start - 1]!) <= max - 40)
    used += bytesOf(chars[--start]!)
  return `… (${bytesOf(text) - used} bytes before)\n${chars.slice(start).join('')}`
}

interface Seen {
  title: string
  kind: string
  status: string
  diffs: { path: string; oldText: string | null; newText: string }[]
  text: string[]
  allowedBy?: string
}

/** A turn's tool calls, folded from its ACP session/update stream (and the host's entries). */
export class WorkLog {
  private readonly calls = new Map<string, Seen>()

  /** `root`: the session's cwd; its diffs name paths relative to it (`a/src/x.ts`). */
  constructor(private readonly root?: string) {}

  note(update: unknown): void {
    if (!isObj(update)) return
    const id = typeof update.toolCallId === 'string' ? update.toolCallId : ''
    if (id === '') return
    const kind = update.sessionUpdate
    if (kind !== 'tool_call' && kind !== 'tool_call_update' && kind !== 'kith_auto_allowed') return
    let call = this.calls.get(id)
    if (call === undefined) {
      call = { title: id, kind: 'other', status: 'pending', diffs: [], text: [] }
      this.calls.set(id, call)
    }
    if (kind === 'kith_auto_allowed') {
      if (typeof update.title === 'string' && call.title === id) call.title = update.title
      if (typeof update.toolKind === 'string') call.kind = update.toolKind
      call.allowedBy = typeof update.policy === 'string' ? update.policy : 'policy'
      return
    }
    if (typeof update.title === 'string') call.title = update.title
    if (typeof update.kind === 'string') call.kind = update.kind
    if (typeof update.status === 'string') call.status = update.status
    // ACP: a tool_call_update's content replaces the call's content.
    if (Array.isArray(update.content)) {
      call.diffs = []
      call.text = []
      for (const c of update.content as unknown[]) {
        if (!isObj(c)) continue
        if (c.type === 'diff' && typeof c.path === 'string' && typeof c.newText === 'string')
          call.diffs.push({
            path: c.path,
            oldText: typeof c.oldText === 'string' ? c.oldText : null,
            newText: c.newText,
          })
        const inner = c.content
        if (c.type === 'content' && isObj(inner) && inner.type === 'text')
          if (typeof inner.text === 'string' && inner.text !== '') call.text.push(inner.text)
      }
    }
  }

  /** The calls in the order they began, whole (`workTags` bounds them). */
  tools(): WorkTool[] {
    return [...this.calls].map(([id, c]) => {
      const diff = c.diffs
        .flatMap((d) => diffLines(d.path, d.oldText, d.newText, this.root))
        .join('\n')
      const output = c.text.join('\n')
      return {
        id,
        title: c.title,
        kind: c.kind,
        status: c.status,
        ...(diff === '' ? {} : { diff }),
        ...(output === '' ? {} : { output }),
        ...(c.allowedBy === undefined ? {} : { allowedBy: c.allowedBy }),
      }
    })
  }
}

/**
 * The `work` tags of a reply: one per tool call, each within `workTagMaxBytes`, all within
 * `budget` bytes (the newest calls are kept; a `work-omitted` tag counts the others).
 */
export function workTags(tools: readonly WorkTool[], budget = workMaxBytes): string[][] {
  const tags: string[][] = []
  let used = 0
  let omitted = 0
  for (let i = tools.length - 1; i >= 0; i--) {
    const t = tools[i]!
    const bare = { id: t.id, title: t.title.slice(0, 500), kind: t.kind, status: t.status }
    const allowed = t.allowedBy === undefined ? {} : { allowedBy: t.allowedBy }
    // Too big at every cut (a huge title): kept as what ran, without its diff and output.
    let json = JSON.stringify({ ...bare, ...allowed })
    for (const [d, o] of cuts) {
      const cut = JSON.stringify({
        ...t,
        ...(t.diff === undefined ? {} : { diff: boundPreview(t.diff, d).preview }),
        ...(t.output === undefined ? {} : { output: tail(t.output, o) }),
      })
      if (bytesOf(cut) <= workTagMaxBytes) {
        json = cut
        break
      }
    }
    if (used + bytesOf(json) > budget) {
      omitted = i + 1
      break
    }
    used += bytesOf(json)
    tags.unshift(['work', json])
  }
  if (omitted > 0) tags.push(['work-omitted', String(omitted)])
  return tags
}

/** The tool calls a reply's `work` tags record (unreadable ones are skipped), in order. */
export function workOf(event: Pick<NostrEvent, 'tags'>): { tools: WorkTool[]; omitted: number } {
  const tools: WorkTool[] = []
  for (const tag of event.tags) {
    if (tag[0] !== 'work' || typeof tag[1] !== 'string') continue
    let v: unknown
    try {
      v = JSON.parse(tag[1])
    } catch {
      // Not a record this reader can show: left out, as an unknown tag would be.
      continue
    }
    if (!isObj(v) || typeof v.id !== 'string' || typeof v.title !== 'string') continue
    const str = (k: string) => (typeof v[k] === 'string' ? v[k] : undefined)
    tools.push({
      id: v.id,
      title: v.title,
      kind: str('kind') ?? 'other',
      status: str('status') ?? 'pending',
      ...(str('diff') === undefined ? {} : { diff: str('diff')! }),
      ...(str('output') === undefined ? {} : { output: str('output')! }),
      ...(str('allowedBy') === undefined ? {} : { allowedBy: str('allowedBy')! }),
    })
  }
  const omitted = Number(event.tags.find((t) => t[0] === 'work-omitted')?.[1] ?? 0)
  return { tools, omitted: Number.isInteger(omitted) && omitted > 0 ? omitted : 0 }
}
