/**
 * A line diff of an edit (ACP `diff` content: oldText → newText), for the agent's progress:
 * the longest common subsequence of lines, shown as kept, removed and added lines with a few
 * lines of context around each change.
 */
export interface DiffLine {
  op: ' ' | '-' | '+'
  text: string
}

/** Past this many lines on a side the diff is shown as a replacement (LCS is quadratic). */
const maxLines = 2000
const context = 3

export function lineDiff(oldText: string | null, newText: string): DiffLine[] {
  const lines = (t: string | null) =>
    t === null || t === '' ? [] : t.replace(/\n$/, '').split('\n')
  const a = lines(oldText)
  const b = lines(newText)
  if (a.length > maxLines || b.length > maxLines)
    return [
      ...a.map((text) => ({ op: '-' as const, text })),
      ...b.map((text) => ({ op: '+' as const, text })),
    ]
  // lcs[i][j]: length of the LCS of a[i:] and b[j:].
  const lcs: Uint32Array[] = Array.from(
    { length: a.length + 1 },
    () => new Uint32Array(b.length + 1),
  )
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--)
      lcs[i]![j] =
        a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!)
  const out: DiffLine[] = []
  let i = 0
  let j = 0
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      out.push({ op: ' ', text: a[i]! })
      i++
      j++
    } else if (i < a.length && (j === b.length || lcs[i + 1]![j]! >= lcs[i]![j + 1]!)) {
      out.push({ op: '-', text: a[i]! })
      i++
    } else {
      out.push({ op: '+', text: b[j]! })
      j++
    }
  }
  return trimContext(out)
}

/** Keeps `context` unchanged lines around each change; longer runs become one "…" line. */
function trimContext(lines: DiffLine[]): DiffLine[] {
  const keep = lines.map((l) => l.op !== ' ')
  const near = lines.map((_, k) => {
    for (let d = -context; d <= context; d++) if (keep[k + d]) return true
    return false
  })
  const out: DiffLine[] = []
  let skipped = false
  lines.forEach((l, k) => {
    if (near[k]) {
      out.push(l)
      skipped = false
    } else if (!skipped) {
      out.push({ op: ' ', text: '…' })
      skipped = true
    }
  })
  return out
}

/** The class of one line of a unified diff (file headers are context, not changes). */
export function unifiedLineClass(line: string): 'add' | 'del' | 'hunk' | 'ctx' {
  if (line.startsWith('+++ ') || line.startsWith('--- ')) return 'ctx'
  if (line.startsWith('+')) return 'add'
  if (line.startsWith('-')) return 'del'
  return line.startsWith('@@') ? 'hunk' : 'ctx'
}
