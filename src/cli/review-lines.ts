/**
 * Agent work shown for review in `kith watch`: a plan as a checklist, an edit's ACP diff content
 * as a unified diff, a tool's output folded to its first lines, usage as one line. Pure: lines in,
 * lines out; the caller prefixes and prints them.
 */
import { diffLines, linesOf } from '../events/unified-diff.js'

export { diffLines }

/** Lines of a tool's text output shown before the rest is folded. */
const foldAfter = 3

const mark: Record<string, string> = { completed: '☑', in_progress: '◐', pending: '☐' }

export function planLines(entries: { content?: string; status?: string }[]): string[] {
  const done = entries.filter((e) => e.status === 'completed').length
  return [
    `plan (${done}/${entries.length} done):`,
    ...entries.map((e) => `  ${mark[e.status ?? ''] ?? '☐'} ${e.content ?? ''}`),
  ]
}

/** A tool's text output: its first lines, and how many more are folded away. */
export function foldedLines(text: string): string[] {
  const lines = linesOf(text)
  if (lines.length <= foldAfter) return lines.map((l) => `  │ ${l}`)
  return [
    ...lines.slice(0, foldAfter).map((l) => `  │ ${l}`),
    `  │ … ${lines.length - foldAfter} more line${lines.length - foldAfter === 1 ? '' : 's'}`,
  ]
}

export function usageLine(u: {
  used?: number
  size?: number
  cost?: { amount?: number; currency?: string } | null
}): string {
  const parts: string[] = []
  if (typeof u.used === 'number')
    parts.push(`${u.used}${typeof u.size === 'number' ? `/${u.size}` : ''} tokens in context`)
  if (typeof u.cost?.amount === 'number')
    parts.push(`${u.cost.amount.toFixed(2)} ${u.cost.currency ?? ''}`.trim())
  return `usage: ${parts.join(', ')}`
}

/**
 * The review lines of one session/update, or undefined when it has none (the caller shows it
 * as one line): a plan, a tool call's diffs and text output, usage.
 */
export function reviewLines(
  u: Record<string, unknown>,
  title: string | undefined,
): string[] | undefined {
  switch (u.sessionUpdate) {
    case 'plan':
      return Array.isArray(u.entries)
        ? planLines(u.entries as { content?: string; status?: string }[])
        : undefined
    case 'usage_update':
      return [usageLine(u)]
    case 'tool_call':
    case 'tool_call_update': {
      if (!Array.isArray(u.content)) return undefined
      const body: string[] = []
      for (const c of u.content as Record<string, unknown>[]) {
        if (c.type === 'diff' && typeof c.path === 'string' && typeof c.newText === 'string')
          body.push(...diffLines(c.path, c.oldText as string | null | undefined, c.newText))
        const inner = c.content as { type?: unknown; text?: unknown } | undefined
        if (c.type === 'content' && inner?.type === 'text' && typeof inner.text === 'string')
          body.push(...foldedLines(inner.text))
      }
      if (body.length === 0) return undefined
      const status = typeof u.status === 'string' ? u.status : 'pending'
      const head =
        u.sessionUpdate === 'tool_call'
          ? `⚙ ${title ?? 'tool'} (${status})`
          : `⚙ ${title ?? 'tool'} → ${status}`
      return [head, ...body]
    }
    default:
      return undefined
  }
}
