/**
 * A unified diff of one file from ACP diff content (path, oldText, newText), as `diff -u` shows
 * it. Pure: `kith watch` shows it, and a permission request carries it (permission-preview.ts).
 */

/** Context lines around each change of a diff (as `diff -u`). */
const context = 3
/** Past this many lines on either side a diff is only counted, not shown. */
const diffMaxLines = 2000

type Op = { op: ' ' | '-' | '+'; line: string; a: number; b: number }

/** The line edit script from `a` to `b` (longest common subsequence). */
function editScript(a: string[], b: string[]): Op[] {
  const n = a.length
  const m = b.length
  // lcs[i][j]: length of the LCS of a[i..] and b[j..].
  const lcs: number[][] = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0))
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      lcs[i]![j] =
        a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!)
  const ops: Op[] = []
  let i = 0
  let j = 0
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) ops.push({ op: ' ', line: a[i]!, a: i++, b: j++ })
    // Removals before additions, as diff -u shows a changed line.
    else if (i < n && (j === m || lcs[i + 1]![j]! >= lcs[i]![j + 1]!))
      ops.push({ op: '-', line: a[i]!, a: i++, b: j })
    else ops.push({ op: '+', line: b[j]!, a: i, b: j++ })
  }
  return ops
}

export const linesOf = (text: string) => (text === '' ? [] : text.replace(/\n$/, '').split('\n'))

/**
 * The path a diff names, as git names it (`a/src/x.ts`): ACP gives absolute paths, shown relative
 * to `root` (the session's cwd) when under it; a path outside it is shown whole, never as `a//…`.
 */
export function diffPath(path: string, root: string | undefined, side: 'a' | 'b'): string {
  const base = root?.replace(/\/+$/, '')
  if (base !== undefined && base !== '' && path.startsWith(`${base}/`))
    return `${side}/${path.slice(base.length + 1)}`
  return path.startsWith('/') ? path : `${side}/${path}`
}

/**
 * A unified diff of one file (ACP diff content: path, oldText (null: a new file), newText);
 * `root`: the session's cwd, that its paths are shown relative to.
 */
export function diffLines(
  path: string,
  oldText: string | null | undefined,
  newText: string,
  root?: string,
): string[] {
  const a = linesOf(oldText ?? '')
  const b = linesOf(newText)
  const head = [
    `--- ${oldText == null ? '/dev/null' : diffPath(path, root, 'a')}`,
    `+++ ${diffPath(path, root, 'b')}`,
  ]
  if (a.length > diffMaxLines || b.length > diffMaxLines)
    return [...head, `@@ ${a.length} lines → ${b.length} lines (too long to show) @@`]
  const ops = editScript(a, b)
  const changed = ops.map((o, k) => (o.op === ' ' ? -1 : k)).filter((k) => k >= 0)
  if (changed.length === 0) return [...head, '(no change)']
  // Hunks: changes with up to `context` lines around them, merged where they touch.
  const hunks: [number, number][] = []
  for (const k of changed) {
    const from = Math.max(0, k - context)
    const to = Math.min(ops.length - 1, k + context)
    const last = hunks[hunks.length - 1]
    if (last !== undefined && from <= last[1] + 1) last[1] = to
    else hunks.push([from, to])
  }
  const out = [...head]
  for (const [from, to] of hunks) {
    const part = ops.slice(from, to + 1)
    const aLen = part.filter((o) => o.op !== '+').length
    const bLen = part.filter((o) => o.op !== '-').length
    const aStart = aLen === 0 ? part[0]!.a : part[0]!.a + 1
    const bStart = bLen === 0 ? part[0]!.b : part[0]!.b + 1
    out.push(`@@ -${aStart},${aLen} +${bStart},${bLen} @@`)
    for (const o of part) out.push(`${o.op}${o.line}`)
  }
  return out
}
