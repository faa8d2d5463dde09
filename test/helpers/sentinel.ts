import { appendFileSync, existsSync, readdirSync, readFileSync } from 'node:fs'
import { basename, dirname, join, relative } from 'node:path'
import { randomBytes } from 'node:crypto'
import { expect } from 'vitest'
import { ControlClient } from '../../src/cli/control-client.js'
import { openLocalFleet, withStore } from '../../src/cli/local-node.js'
import { sealingLapse, type Sealing } from '../../src/grants/e2e-sealing.js'
import { homeFiles } from '../../src/identity/home.js'
import { loadIdentity } from '../../src/identity/keys.js'
import { fleetSealingHere } from '../../src/node/e2e-keys.js'

// The test-wide half of kith-e2e/1's promise (issue 29, "Done when ... a sentinel message in
// every test fleet is absent from every hub file"). The shared helpers call this file:
//   - startNodeProcess: before a node stops (the test's own stop(), or the cleanup after the
//     test), a node whose fleet seals sends a fresh sentinel text through its control socket,
//     as `kith send` would, to a channel of its own (no test counts it). A node whose fleet
//     does not seal sends nothing: it must be in `plainFleets` below, or the test fails.
//   - startHubProcess, startTestHub, and a node's embedded hub: once a hub stopped, every file
//     of its store (hub.db, -wal, -shm, -journal) is read as an operator reading the disk would,
//     and the test fails if any sentinel sent so far in this test file is there in plaintext.
// A sentinel is random and sent only for this check, so nothing the test itself writes (into a
// node's dir, a profile, presence) can be one. Node homes are never scanned: a node keeps its
// own fleet's plaintext by design.
//
// Raw clients (test/helpers/raw-client.ts, the hub and attacker tests) sign whatever the test
// chooses, plaintext on purpose: nothing they send is a sentinel, so their hubs are scanned but
// hold no sealed sentinel unless a kith node of a sealed fleet used them too.
//
// KITH_SENTINEL_REPORT=FILE appends one JSON line per node stop and per hub scan there, for
// counting what the check covered.

/**
 * Tests with fleets that are plain on purpose, and why: a test file (every test in it), a folder
 * (a key ending in /), or one test (`file > words of its title`). A node in a fleet that does not
 * seal at its stop fails its test unless it is named here: a plain fleet is a decision a reader
 * can see, never a silent gap in the check.
 */
export const plainFleets: Record<string, string> = {
  'test/e2e/agent.test.ts > answers @mentions with replies signed by the agent key':
    'a plain fleet, to show what a third-party Nostr client reads (the reply and its NIP-OA tag)',
  'test/e2e/agent-binding.test.ts':
    'its attackers are raw clients signing cancels, cards and answers in the clear, which a sealed fleet refuses before binding is judged',
  'test/e2e/audit-cli.test.ts':
    'kith audit export carries only events with their own signature; a plain fleet lets the export hold the whole turn, so the --file audit can be compared with the host audit',
  'test/e2e/channels-cli.test.ts > publishes through the running node to its embedded hub':
    'sealing is turned off so that raw clients can read what the hub relays',
  'test/e2e/quorum.test.ts':
    "a raw client signs a second device's decision in the clear, to show the host counts one person once past the CLI's own refusal",
  'test/notify/notify-node.test.ts > pushes cards to the person':
    'full texts to third-party notify targets are what it is about; a sealed fleet sends the brief',
  'test/e2e/sentinel-check.test.ts > a plain fleet declared on purpose':
    'the check’s own test: it leaks a sentinel from a plain in-process fleet to see it caught',
  'test/agents/':
    "the real-agent tier's fleet (test/agents/fleet.ts) is plain: its tests check each card's and reply's own signature, as a plain Nostr client would",
}

/** Why the running test's fleets may be plain, or undefined. */
function plainBecause(file: string, test: string): string | undefined {
  return Object.entries(plainFleets).find(([k]) => {
    if (k.endsWith('/')) return file.startsWith(k)
    const [f, words] = k.split(' > ') as [string, string | undefined]
    return f === file && (words === undefined || test.includes(words))
  })?.[1]
}

interface Sent {
  text: string
  id: string
  home: string
}

/** Sentinels sent sealed in this test file (vitest runs each file in its own module graph). */
const sent: Sent[] = []

/** Which test file is running, relative to the repository (for `plainFleets`). */
function currentFile(): string {
  const path = expect.getState().testPath ?? ''
  const root = new URL('../../', import.meta.url).pathname
  return relative(root, path).split('\\').join('/')
}

function report(line: Record<string, unknown>): void {
  const file = process.env.KITH_SENTINEL_REPORT
  if (file !== undefined && file !== '')
    appendFileSync(file, `${JSON.stringify({ file: currentFile(), ...line })}\n`)
}

/**
 * Where sentinels go: a channel of their own, so that a test counting #ops (or any channel it
 * made) after a node's stop and restart counts what it sent, and no agent is prompted.
 */
export const sentinelChannel = 'kith-sentinel'

/** A text no test writes: 'kith-sentinel-' and 16 random bytes in hex. */
export function sentinelText(): string {
  return `kith-sentinel-${randomBytes(16).toString('hex')}`
}

/** The fleet's sealing as the node in `home` decides it (read from its node.db, as the CLI does). */
function sealingOf(home: string): Sealing {
  const node = openLocalFleet(loadIdentity(home))
  try {
    return withStore(home, (store) =>
      fleetSealingHere(store, node.book, node.fleet, Math.floor(Date.now() / 1000)),
    )
  } finally {
    node.book.close()
  }
}

export type NodeCheck =
  { sent: Sent } | { skipped: string } | { exempt: string } | { unsealed: 'no setting yet' }

/**
 * Before the node in `home` stops: if its fleet seals, sends a sentinel to #kith-sentinel and keeps it for
 * the hub scans; if its fleet does not seal, the test's file must say why (`plainFleets`).
 * `beforeSend` runs only when a sentinel is about to go (an in-process node waits there for a
 * hub link, so that the sentinel reaches a hub rather than its outbox).
 */
export async function beforeNodeStops(
  home: string,
  beforeSend?: () => Promise<void>,
): Promise<NodeCheck> {
  const result = await nodeCheck(home, beforeSend)
  report({ node: home, ...result })
  return result
}

async function nodeCheck(home: string, beforeSend?: () => Promise<void>): Promise<NodeCheck> {
  const control = await ControlClient.connect(join(home, homeFiles.controlSocket))
  if (control === undefined) return { skipped: 'no node runs' }
  try {
    let sealing: Sealing
    try {
      sealing = sealingOf(home)
    } catch (err) {
      // A home whose identity is gone or half made (a device removed, a join undone).
      return { skipped: `no fleet to read: ${(err as Error).message}` }
    }
    if (!sealing.on) {
      const why = plainBecause(currentFile(), expect.getState().currentTestName ?? '')
      if (why !== undefined) return { exempt: why }
      // No setting at all: a fleet founded with an imported key whose founder has not caught
      // up yet (kith-e2e/1 then signs "on"); nothing was ever promised sealed.
      if (sealing.decidedBy === undefined) return { unsealed: 'no setting yet' }
      throw new Error(
        `sentinel check: the fleet of ${home} does not seal at the end of the test ` +
          `(${sealingLapse(sealing) ?? 'its setting says off'}); a plain fleet on purpose ` +
          `goes in plainFleets (test/helpers/sentinel.ts) with why`,
      )
    }
    await beforeSend?.()
    try {
      return { sent: await sendSentinel(home, control) }
    } catch (err) {
      // A removed device sends nothing: nothing to look for.
      return { skipped: `send refused: ${(err as Error).message}` }
    }
  } finally {
    control.close()
  }
}

/**
 * Sends a sentinel to #kith-sentinel from the node in `home`, whatever its fleet decides, and keeps it for
 * the hub scans (the check's own test uses it to leak one on purpose).
 */
export async function sendSentinel(home: string, control?: ControlClient): Promise<Sent> {
  const c = control ?? (await ControlClient.connect(join(home, homeFiles.controlSocket)))
  if (c === undefined) throw new Error(`no node runs in ${home}`)
  try {
    const text = sentinelText()
    // The node answers with its own view of what it sent (the wire's id, the text in the
    // clear); what went out is for the hub scans to judge.
    const { event } = await c.request('send', {
      channel: sentinelChannel,
      text,
      waitMs: 10_000,
    })
    const s = { text, id: event.id, home }
    sent.push(s)
    return s
  } finally {
    if (control === undefined) c.close()
  }
}

/** Forgets the sentinels kept so far (after a test that leaked one on purpose saw it caught). */
export function forgetSentinels(): void {
  sent.length = 0
}

/** The files of the store at `db`: the database and every file sqlite keeps beside it. */
export function storeFiles(db: string): string[] {
  const dir = dirname(db)
  if (!existsSync(dir)) return []
  const name = basename(db)
  return readdirSync(dir, { withFileTypes: true })
    .filter((f) => f.isFile() && f.name.startsWith(name))
    .map((f) => join(dir, f.name))
}

/** Every file directly in `dir` (an in-process test hub's own temp dir). */
export function dirFiles(dir: string): string[] {
  if (!existsSync(dir)) return []
  return readdirSync(dir, { withFileTypes: true })
    .filter((f) => f.isFile())
    .map((f) => join(dir, f.name))
}

/**
 * After a hub stopped: fails when any sentinel of this test file is in `files` in plaintext.
 * Returns how many sentinels the hub holds as sealed events (their ids are in its files).
 */
export function scanHub(label: string, files: string[]): number {
  const bytes = files.map((f) => ({ f, b: readFileSync(f) }))
  const leaks = sent.flatMap((s) =>
    bytes
      .filter(({ b }) => b.includes(s.text))
      .map(({ f }) => `${s.text} (from ${s.home}) in ${f}`),
  )
  const held = sent.filter((s) => bytes.some(({ b }) => b.includes(s.id))).length
  if (files.length > 0)
    report({ hub: label, files: files.length, sentinels: sent.length, held, leaks: leaks.length })
  if (leaks.length > 0)
    throw new Error(
      `sentinel check: a sealed fleet's message is plaintext in a hub file: ${leaks.join('; ')}`,
    )
  return held
}

/** The embedded hub of a node (kith up with no hubs keeps one in its home). */
export function embeddedHubFiles(home: string): string[] {
  return storeFiles(join(home, homeFiles.hubDb))
}
