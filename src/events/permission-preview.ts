import { diffLines } from './unified-diff.js'

/**
 * What a permission request (kind 4142) shows of its tool call, so a person can decide without
 * asking what it would do: the diff of an edit, the command and its cwd for an execute, the path
 * of a read (kith-agents/1, "Permission request": `preview`, `previewBytes`). Pure: the hosting
 * node makes it from the ACP call; chat, `kith permit` and the web app show it as it is.
 */

/**
 * At most this many UTF-8 bytes of preview in a request, the truncation marker included: a
 * sealed request (at most 40,960 bytes of plaintext: e2e-seal.ts) holds it even when JSON escapes
 * every character twice.
 */
export const previewMaxBytes = 6144

/** The parts of an ACP tool call a preview is made of (request, or its announcing updates). */
export interface PreviewCall {
  toolKind: string
  title: string
  rawInput?: unknown
  locations?: readonly { path?: unknown; line?: unknown }[] | null
  content?: unknown
  /** Where the session runs: the cwd of a command that names none. */
  cwd?: string
}

const encoder = new TextEncoder()
const bytesOf = (text: string) => encoder.encode(text).length

const record = (v: unknown): Record<string, unknown> | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined

const firstString = (o: Record<string, unknown> | undefined, keys: string[]) => {
  for (const k of keys) {
    const v = o?.[k]
    if (typeof v === 'string' && v !== '') return v
  }
  return undefined
}

/** The unified diffs of the call: its ACP `diff` content, else an edit's old and new strings. */
function diffs(call: PreviewCall): string[] {
  const out: string[] = []
  if (Array.isArray(call.content))
    for (const item of call.content as unknown[]) {
      const c = record(item)
      if (c?.type === 'diff' && typeof c.path === 'string' && typeof c.newText === 'string')
        out.push(...diffLines(c.path, c.oldText as string | null | undefined, c.newText, call.cwd))
    }
  if (out.length > 0) return out
  // Adapters that put the edit only in rawInput (Claude Code's Edit and Write, MultiEdit).
  const raw = record(call.rawInput)
  const path = firstString(raw, ['file_path', 'path', 'filePath', 'abs_path'])
  if (raw === undefined || path === undefined) return out
  const edits = Array.isArray(raw.edits) ? raw.edits.map(record) : [raw]
  for (const e of edits) {
    const oldText = firstString(e, ['old_string', 'oldText', 'old_str'])
    const newText = e?.new_string ?? e?.newText ?? e?.new_str
    if (typeof newText === 'string' && (oldText !== undefined || e?.old_string === ''))
      out.push(...diffLines(path, oldText ?? '', newText, call.cwd))
  }
  if (out.length === 0 && call.toolKind === 'edit' && typeof raw.content === 'string')
    out.push(...diffLines(path, null, raw.content, call.cwd))
  return out
}

/** A command line as the call gives it (a string, or argv as an array), and its cwd. */
function command(call: PreviewCall): string[] {
  const raw = record(call.rawInput)
  const cmd = raw?.command ?? raw?.cmd
  const args = Array.isArray(raw?.args) ? raw.args.filter((a) => typeof a === 'string') : []
  let line: string | undefined
  if (typeof cmd === 'string' && cmd !== '') line = [cmd, ...args].join(' ')
  else if (Array.isArray(cmd) && cmd.every((a) => typeof a === 'string') && cmd.length > 0)
    line = [...cmd, ...args].join(' ')
  if (line === undefined && call.toolKind === 'execute' && call.title !== '') line = call.title
  if (line === undefined) return []
  const cwd = firstString(raw, ['cwd', 'workdir', 'working_directory']) ?? call.cwd
  return [`$ ${line}`, ...(cwd === undefined ? [] : [`in ${cwd}`])]
}

/** The paths the call names: its locations, else its raw input's path fields. */
function paths(call: PreviewCall): string[] {
  const out: string[] = []
  for (const l of call.locations ?? [])
    if (typeof l.path === 'string')
      out.push(typeof l.line === 'number' ? `${l.path}:${l.line}` : l.path)
  if (out.length > 0) return [...new Set(out)]
  const raw = record(call.rawInput)
  const p = firstString(raw, ['path', 'file_path', 'filePath', 'abs_path', 'pattern'])
  return p === undefined ? [] : [p]
}

/**
 * What the call will do, in lines a person reads: an edit's unified diff; an execute's `$ command`
 * and `in <cwd>`; else the paths it names; else its raw input as JSON. Undefined when the call
 * says nothing beyond its title.
 */
export function callPreview(call: PreviewCall): string | undefined {
  const lines = diffs(call)
  if (lines.length === 0) lines.push(...command(call))
  if (lines.length === 0) lines.push(...paths(call))
  if (lines.length === 0 && record(call.rawInput) !== undefined) {
    const json = JSON.stringify(call.rawInput, null, 2)
    if (json !== '{}') lines.push(json)
  }
  return lines.length === 0 ? undefined : lines.join('\n')
}

/**
 * The preview as a request carries it: whole when it fits `previewMaxBytes`; else its first
 * lines (or bytes) with a marker line saying how much of how much is shown, and `previewBytes`
 * the whole preview's size.
 */
export function boundPreview(
  text: string,
  max = previewMaxBytes,
): { preview: string; previewBytes?: number } {
  const total = bytesOf(text)
  if (total <= max) return { preview: text }
  const marker = (shown: number) => `\n… truncated: ${shown} of ${total} bytes shown`
  const room = max - bytesOf(marker(total))
  // The longest prefix within `room`, by code point (never half a character).
  let used = 0
  let end = 0
  for (const ch of text) {
    const size = bytesOf(ch)
    if (used + size > room) break
    used += size
    end += ch.length
  }
  // At a line's end when one is near, so no line is shown cut.
  const newline = text.lastIndexOf('\n', end)
  const cut = newline > end * 0.75 ? newline : end
  const shown = text.slice(0, cut)
  return { preview: shown + marker(bytesOf(shown)), previewBytes: total }
}

/** Whether `preview` is within the bound a request's preview keeps. */
export function previewFits(preview: string): boolean {
  return bytesOf(preview) <= previewMaxBytes
}
