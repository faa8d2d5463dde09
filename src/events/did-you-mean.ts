/**
 * "Did you mean …?" for a mistyped name (a channel, an @name): the candidates nearest to `word`
 * by edit distance (insertions, deletions, substitutions and swaps of neighbours), closest first.
 * A candidate counts when it is within a third of the word's length (at least 1, at most 3
 * edits), or when one is a prefix of the other. Pure; case-insensitive.
 */
export function didYouMean(word: string, candidates: Iterable<string>, max = 3): string[] {
  const w = word.toLowerCase()
  const limit = Math.min(3, Math.max(1, Math.floor(w.length / 3)))
  const scored: { c: string; d: number }[] = []
  for (const c of new Set(candidates)) {
    const lower = c.toLowerCase()
    if (lower === w) continue
    const d = editDistance(w, lower)
    const prefix = w.length >= 2 && (lower.startsWith(w) || w.startsWith(lower))
    if (d <= limit || prefix) scored.push({ c, d: prefix ? Math.min(d, limit) : d })
  }
  return scored
    .sort((a, b) => a.d - b.d || a.c.localeCompare(b.c))
    .slice(0, max)
    .map((s) => s.c)
}

/** Optimal string alignment distance (Damerau-Levenshtein without repeated edits of a span). */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1
  const cols = b.length + 1
  const d: number[][] = Array.from({ length: rows }, (_, i) =>
    Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  )
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        v = Math.min(v, d[i - 2]![j - 2]! + 1)
      d[i]![j] = v
    }
  }
  return d[a.length]![b.length]!
}
