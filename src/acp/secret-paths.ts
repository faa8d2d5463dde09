import { basename, isAbsolute, relative, resolve, sep } from 'node:path'
import { homeFiles } from '../identity/home.js'

/**
 * Which tool calls touch secrets a host must never let run unasked: Kith's own KITH_HOME (keys,
 * node.db) and the credentials a developer's home usually holds. Pure: the caller passes the
 * places and a `realpath` (symlinks are followed there, so this module touches no file system).
 *
 * This is a tripwire, not a sandbox: it reads the paths a call names (its locations, its raw
 * input, its title, the paths of its diffs, the words of a command line), so a command that
 * builds a path at run time (`cat $(echo ~/.k)ith/owner.key`, base64, a script) gets past it. Only
 * running the agent as another OS user (or in a container) keeps such secrets out of its reach.
 */

/** The parts of an ACP tool call (session/request_permission, tool_call updates) a host reads. */
export interface ToolCallView {
  kind: string
  title: string
  rawInput?: unknown
  locations?: readonly { path?: unknown }[] | null
  content?: unknown
}

export interface SecretPlaces {
  /** KITH_HOME as configured (absolute). */
  kithHome: string
  /** The home directory of the user the agent runs as. */
  home: string
  /** Where the agent's relative paths resolve (the session's cwd). */
  cwd: string
  /**
   * The real path of an absolute path as written (it may hold `..`), symlinks resolved as the
   * kernel would (of its longest existing prefix when it does not exist yet).
   */
  realpath: (path: string) => string
}

/** A directory or file holding secrets, as a path relative to a root, and what it holds. */
interface Place {
  root: 'kith' | 'home'
  rel: string
  what: string
}

/** Under the home directory: credentials of the usual tools (and of the agents themselves). */
const homePlaces: readonly Place[] = [
  ['.ssh', 'SSH keys'],
  ['.gnupg', 'GnuPG keys'],
  ['.aws', 'AWS credentials'],
  ['.config/gcloud', 'Google Cloud credentials'],
  ['.azure', 'Azure credentials'],
  ['.kube', 'Kubernetes credentials'],
  ['.docker/config.json', 'Docker registry credentials'],
  ['.netrc', 'login passwords (.netrc)'],
  ['.git-credentials', 'git credentials'],
  ['.config/gh', 'GitHub CLI token'],
  ['.npmrc', 'npm tokens'],
  ['.pypirc', 'PyPI tokens'],
  ['.password-store', 'a password store'],
  ['.local/share/keyrings', 'the desktop keyring'],
  ['.codex/auth.json', "an agent's login"],
  ['.claude/.credentials.json', "an agent's login"],
  ['.gemini/oauth_creds.json', "an agent's login"],
].map(([rel, what]) => ({ root: 'home', rel: rel!, what: what! }))

/** Anywhere: file names that hold secrets by convention. */
function secretFileName(name: string): string | undefined {
  if (/^\.env(\..+)?$/.test(name) && !/^\.env\.(example|sample|template|dist)$/.test(name))
    return 'an environment file (usually secrets)'
  if (/^id_(rsa|dsa|ecdsa|ed25519)(_sk)?$/.test(name)) return 'an SSH private key'
  if (/\.(key|pem|p12|pfx)$/.test(name)) return 'a key or certificate file'
  return undefined
}

/** Where `path` lies relative to `root`: inside (or equal), an ancestor of it, or neither. */
function relation(root: string, path: string): { inside: string } | 'ancestor' | undefined {
  const r = relative(root, path)
  if (r === '') return { inside: '' }
  if (!r.startsWith('..') && !isAbsolute(r)) return { inside: r }
  const up = relative(path, root)
  if (up !== '' && !up.startsWith('..') && !isAbsolute(up)) return 'ancestor'
  return undefined
}

/** What a KITH_HOME entry holds. */
function kithWhat(inside: string): string {
  const parts = inside.split(sep)
  if (inside === '') return "Kith's keys and state"
  if (parts[0] === homeFiles.ownerKey || parts[0] === homeFiles.deviceKey) return "Kith's keys"
  if (parts[0] === homeFiles.agents) return "Kith's agent keys"
  // node.db and hub.db with their -wal and -shm files.
  if (parts[0]?.startsWith(homeFiles.nodeDb) || parts[0]?.startsWith(homeFiles.hubDb))
    return "Kith's database (grants, chat, outbox)"
  return "Kith's state"
}

/** Words of a command line or title, unquoted (a shell's word splitting, roughly). */
function words(text: string): string[] {
  return text
    .split(/[\s;|&<>()`'"=,]+/)
    .map((w) => w.trim())
    .filter((w) => w !== '' && !w.startsWith('-') && !w.includes('://'))
}

/** Keys of a raw input whose string value is a path as a whole. */
const pathKeys =
  /^(path|paths|file|files|file_?path|abs_?path|filename|dir|directory|cwd|target|source|destination|dest|from|to|root|include)$/i
/** Keys whose value is file content, not what the call touches (an edit's new text). */
const contentKeys =
  /^(content|contents|text|body|new_?string|old_?string|new_?text|old_?text|patch|diff|data)$/i
/** Keys whose value is a command line or pattern: always read word by word. */
const commandKeys = /^(command|cmd|commands|args|argv|script|shell|exec|pattern|glob|query)$/i

/** Every path-like string a tool call names, as written (not yet expanded). */
export function namedPaths(call: ToolCallView): string[] {
  const out: string[] = []
  const looksLikePath = (w: string) =>
    w.includes('/') || w.startsWith('~') || w.startsWith('.') || secretFileName(w) !== undefined
  const fromText = (text: string) => {
    for (const w of words(text)) if (looksLikePath(w)) out.push(w)
  }
  let budget = 2000
  const walk = (value: unknown, key: string, depth: number): void => {
    if (budget-- <= 0 || depth > 8) return
    if (typeof value === 'string') {
      if (pathKeys.test(key) && value.trim() !== '') out.push(value.trim())
      // Other short one-line values are read too (an adapter's own key names), but not content.
      if (
        commandKeys.test(key) ||
        (!contentKeys.test(key) && value.length <= 300 && !value.includes('\n'))
      )
        fromText(value)
    } else if (Array.isArray(value)) {
      for (const v of value) walk(v, key, depth + 1)
    } else if (typeof value === 'object' && value !== null) {
      for (const [k, v] of Object.entries(value)) walk(v, k, depth + 1)
    }
  }
  fromText(call.title)
  walk(call.rawInput, '', 0)
  for (const l of call.locations ?? []) if (typeof l.path === 'string') out.push(l.path)
  // Content: only the paths of diffs (their text is file content, not what the call touches).
  if (Array.isArray(call.content)) {
    for (const c of call.content as { type?: unknown; path?: unknown }[]) {
      if (c?.type === 'diff' && typeof c.path === 'string') out.push(c.path)
    }
  }
  return [...new Set(out)]
}

/** Tool kinds that may look through a whole tree below a path (an ancestor of a secret counts). */
const treeKinds: ReadonlySet<string> = new Set(['search', 'execute', 'other'])

/**
 * Why the call must go to a person (`touches KITH_HOME/owner.key: Kith's keys`), or undefined
 * when it names no secret place. Paths are expanded (`~`, `$HOME`), made absolute against the
 * cwd, normalised (`..`) and checked both as written and with symlinks resolved. A search or a
 * command naming a directory above a secret place (`grep -r token ~`), or a glob whose fixed
 * part is one, counts as touching it; so does a search with no path when the cwd is such a
 * directory.
 */
export function secretTouched(call: ToolCallView, places: SecretPlaces): string | undefined {
  const roots = {
    kith: [resolve(places.kithHome), places.realpath(resolve(places.kithHome))],
    home: [resolve(places.home), places.realpath(resolve(places.home))],
  }
  const named = namedPaths(call)
  if (named.length === 0 && call.kind === 'search') named.push('.')
  // The strongest reason wins: KITH_HOME before the home's credentials before a file's name.
  let best: { rank: number; why: string } | undefined
  const found = (rank: number, why: string) => {
    if (best === undefined || rank < best.rank) best = { rank, why }
  }
  for (const written of named) {
    let text = written
      .replace(/^\$\{?HOME\}?(?=\/|$)/, places.home)
      .replace(/^~(?=\/|$)/, places.home)
    // A glob matches below its fixed part: that directory is what it may reach.
    const glob = text.search(/[*?[{]/)
    const isGlob = glob >= 0
    if (isGlob) text = text.slice(0, glob).replace(/[^/]*$/, '') || '.'
    // Symlinks are followed before `..` (as the kernel does), so the real path is asked of the
    // path as written; the lexical one catches a path whose symlinks lead elsewhere.
    const joined = isAbsolute(text) ? text : `${places.cwd}/${text}`
    const lexical = resolve(joined)
    const real = places.realpath(joined)
    const tree = isGlob || treeKinds.has(call.kind)
    for (const path of new Set([lexical, real])) {
      for (const kith of roots.kith) {
        const r = relation(kith, path)
        if (r === 'ancestor' && tree) found(1, `reaches KITH_HOME (under ${written}): Kith's keys`)
        else if (r !== undefined && r !== 'ancestor') {
          const shown = r.inside === '' ? 'KITH_HOME' : `KITH_HOME/${r.inside.split(sep).join('/')}`
          found(0, `touches ${shown}: ${kithWhat(r.inside)}`)
        }
      }
      for (const home of roots.home) {
        for (const place of homePlaces) {
          const r = relation(resolve(home, place.rel), path)
          if (r === 'ancestor' && tree)
            found(3, `reaches ~/${place.rel} (under ${written}): ${place.what}`)
          else if (r !== undefined && r !== 'ancestor')
            found(2, `touches ~/${place.rel}: ${place.what}`)
        }
      }
      const what = secretFileName(basename(path))
      if (what !== undefined) found(4, `touches ${basename(path)}: ${what}`)
    }
  }
  return (best as { why: string } | undefined)?.why
}
