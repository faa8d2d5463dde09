import { nip77 } from 'nostr-tools'
import type { Filter } from '../events/filter.js'
import type { EventStore, HideRule, QueryCursor } from '../store/event-store.js'
import type { SetSealer } from '../events/nip77-set.js'
import { SetReader } from './negentropy-set.js'
import type { HubLimits } from './limits.js'
import type { WorkBudget } from './req-scheduler.js'
import type { TurnQueue } from './turn-queue.js'

/** What one reconciliation needs from its connection. */
export interface NegPeer {
  send(frame: unknown[]): void
  /** The private channels this connection may not read, now (as for its REQs). */
  hidden(): readonly HideRule[]
  /** Who pays: the person of the connection (as for its REQs). */
  payer(): string
}

/**
 * The hub-wide budgets a reconciliation draws on: main-thread time per person (the REQs' work
 * budget) and open reconciliations per person.
 */
export interface NegBudget {
  work: WorkBudget
  open: Map<string, number>
  maxOpenPerPerson: number
  /** Hub-wide: every reconciliation's next step waits its turn here (one a loop turn). */
  turns: TurnQueue
}

/** The protocol's "nothing more to say" answer: the version byte alone (NIP-77 v1). */
const doneMessage = '61'

const modeFingerprint = 1
const modeIdList = 2

/**
 * nostr-tools' Negentropy (2.25.2) implements the initiator's side of an IdList range only: a
 * responder handed one answers nothing, and the client never learns what the hub holds in that
 * range. So before the hub's Negentropy reads a client message, each IdList range is rewritten
 * as a Fingerprint range that cannot match (16 zero bytes): the responder then sends its own
 * ids for the range (or finer fingerprints), which is what a responder owes an IdList (NIP-77).
 * Bounds are copied byte for byte; only modes and payloads change. Throws on a malformed message.
 */
export function asResponderQuery(hex: string): string {
  const bytes = Buffer.from(hex, 'hex')
  if (bytes.length * 2 !== hex.length) throw new Error('the message is not hex')
  let at = 0
  // Views of the message (bounds and modes kept) and the stand-in for each IdList payload,
  // joined once at the end: answers over large sets carry thousands of ranges.
  const out: Uint8Array[] = []
  const need = (n: number) => {
    if (at + n > bytes.length) throw new Error('the message ends prematurely')
  }
  const varint = (): number => {
    let value = 0
    for (;;) {
      need(1)
      const byte = bytes[at++]!
      value = value * 128 + (byte & 127)
      if ((byte & 128) === 0) return value
    }
  }
  need(1)
  at++
  out.push(bytes.subarray(0, 1))
  while (at < bytes.length) {
    const boundStart = at
    varint() // the bound's timestamp
    const idLength = varint()
    if (idLength > 32) throw new Error('bound key too long')
    need(idLength)
    at += idLength
    out.push(bytes.subarray(boundStart, at))
    const modeStart = at
    const mode = varint()
    if (mode === modeIdList) {
      const count = varint()
      need(count * 32)
      at += count * 32
      out.push(unmatchableFingerprint)
    } else {
      if (mode === modeFingerprint) {
        need(16)
        at += 16
      } else if (mode !== 0) throw new Error('unexpected mode')
      out.push(bytes.subarray(modeStart, at))
    }
  }
  return Buffer.concat(out).toString('hex')
}

/** Fingerprint mode and 16 zero bytes: a fingerprint no set has (see `asResponderQuery`). */
const unmatchableFingerprint = Uint8Array.from([modeFingerprint, ...new Uint8Array(16)])

/** A set still being read from the store, a slice per turn, resumed after the last row read. */
interface Building {
  /** Rows read so far, in NIP-01 order (newest first). */
  read: SetReader
  filter: Filter
  after: QueryCursor | undefined
  /** The client's first message, answered once the set is built. */
  message: string
  /** Once every row is read: the set being put in NIP-77 order and summed. */
  sealer?: SetSealer | undefined
}

/**
 * Items sealed between two looks at the clock: ~0.15 ms here. At 8,192 a step took ~1.2 ms, run
 * even when the slice's reads had spent its time, so a slice could hold the loop ~2.5 ms.
 */
const sealStep = 1024

interface Reconciliation {
  /** Undefined while the set is being built (`building`). */
  neg: nip77.Negentropy | undefined
  building: Building | undefined
  timer: NodeJS.Timeout
  payer: string
  /**
   * Cancels what is scheduled: the set's next slice, or a NEG-MSG waiting for its person's work
   * budget to refill.
   */
  deferred?: (() => void) | undefined
}

/**
 * NIP-77 set reconciliation over the events a member may read: the same filter, private-channel
 * rules and store as a REQ. The hub only answers (a client initiates); the set of (created_at, id)
 * is read at NEG-OPEN, `negSliceItems` rows a turn (each slice charged to the person's work
 * budget, as a REQ's are), and held until NEG-CLOSE, the idle limit or the connection's end.
 */
export class NegReconciliations {
  private readonly recs = new Map<string, Reconciliation>()

  constructor(
    private readonly store: EventStore,
    private readonly limits: HubLimits,
    private readonly peer: NegPeer,
    private readonly budget: NegBudget,
  ) {}

  /** NEG-OPEN: a filter already parsed and checked, and the client's first message (hex). */
  open(subId: string, filter: Filter, message: string): void {
    // NIP-77: opening an id in use replaces the old reconciliation.
    this.close(subId)
    if (this.recs.size >= this.limits.negMaxOpen) {
      this.error(
        subId,
        `blocked: at most ${this.limits.negMaxOpen} reconciliations at once on a connection`,
      )
      return
    }
    const payer = this.peer.payer()
    const { open, maxOpenPerPerson } = this.budget
    if ((open.get(payer) ?? 0) >= maxOpenPerPerson) {
      this.error(
        subId,
        `blocked: at most ${maxOpenPerPerson} reconciliations at once per person (negentropy_max_sessions_per_person)`,
      )
      return
    }
    // A reconciliation covers the whole match: NIP-77 has no use for a REQ's limit.
    const unlimited: Filter = { ...filter }
    delete unlimited.limit
    const rec: Reconciliation = {
      neg: undefined,
      building: { read: new SetReader(), filter: unlimited, after: undefined, message },
      timer: this.idleTimer(subId),
      payer,
    }
    this.recs.set(subId, rec)
    open.set(payer, (open.get(payer) ?? 0) + 1)
    // Never read in the frame's own turn: a client sending NEG-OPENs faster than they are read
    // would have each one read a slice while the frames of every other connection wait behind
    // them. Each slice takes its turn in the hub-wide queue, once the person has work budget
    // (the caps above bound how many wait).
    this.whenBudget(subId, rec, () => this.build(subId, rec))
  }

  /**
   * Reads one slice of the set, then yields: the next slice runs on a later turn (after the
   * person's work budget allows), so other connections are answered while a large set is read.
   * Rows are read after the last one read, in NIP-01 order, with what the member may not see
   * asked afresh each slice (as a REQ's slices do).
   */
  private build(subId: string, rec: Reconciliation): void {
    const b = rec.building
    if (b === undefined || this.recs.get(subId) !== rec) return
    rec.timer.refresh()
    const startedAt = performance.now()
    const max = this.limits.negMaxItems
    const sliceMs = this.limits.negSliceMs
    // Pages until the slice's time is up: what a slice costs is bounded in time, not rows, so
    // another connection's frame waits at most about `negSliceMs` behind it, however slow the
    // rows (hidden channels, a cold page cache) are to read.
    while (b.sealer === undefined) {
      const want = Math.min(this.limits.negSliceItems, max + 1 - b.read.length)
      const rows = this.store.readKeys(b.filter, want, this.peer.hidden(), b.after)
      for (const [, createdAt, id] of rows) b.read.add(createdAt, id)
      const last = rows.at(-1)
      if (last !== undefined) b.after = { created_at: last[1], id: last[2] }
      if (b.read.length > max) {
        this.charge(rec, startedAt)
        this.close(subId)
        this.error(
          subId,
          `blocked: the filter matches more than ${max} events; narrow it (since/until)`,
        )
        return
      }
      if (rows.length < want) b.sealer = b.read.seal()
      else if (performance.now() - startedAt >= sliceMs) break
    }
    // Then the set is sealed, in steps on the same clock.
    let done = false
    if (b.sealer !== undefined) {
      // Not begun once the reads spent the slice: the next slice starts with it, so it goes on.
      while (!done && performance.now() - startedAt < sliceMs) done = b.sealer.step(sealStep)
      if (done) {
        rec.building = undefined
        rec.neg = new nip77.Negentropy(b.sealer.set, this.limits.maxFrameBytes - 1024)
      }
    }
    this.charge(rec, startedAt)
    if (done) this.whenBudget(subId, rec, () => this.answer(subId, rec, b.message))
    else this.whenBudget(subId, rec, () => this.build(subId, rec))
  }

  /** Runs `next` on a later turn, once the reconciliation's person has work budget left. */
  private whenBudget(subId: string, rec: Reconciliation, next: () => void): void {
    const run = () => {
      rec.deferred = undefined
      if (this.recs.get(subId) !== rec) return
      // Other reconciliations of the person may have spent the budget in this same turn.
      if (this.budget.work.wait(rec.payer, Date.now()) > 0) this.whenBudget(subId, rec, next)
      else next()
    }
    const wait = this.budget.work.wait(rec.payer, Date.now())
    if (wait > 0) {
      // The wait ends in the timers phase, where every reconciliation whose budget refilled at
      // that moment would read its slice back to back before any frame is read: the slice still
      // takes its place in the hub-wide queue, one slice a turn.
      const timer = setTimeout(() => {
        rec.deferred = this.budget.turns.schedule(run)
      }, wait)
      rec.deferred = () => clearTimeout(timer)
    } else rec.deferred = this.budget.turns.schedule(run)
  }

  private charge(rec: Reconciliation, startedAt: number): void {
    this.budget.work.charge(rec.payer, performance.now() - startedAt, Date.now())
  }

  /** NEG-MSG: the client's next message in an open reconciliation. */
  message(subId: string, message: string): void {
    const rec = this.recs.get(subId)
    if (rec === undefined) {
      this.error(subId, 'closed: no reconciliation open under this id')
      return
    }
    rec.timer.refresh()
    if (rec.deferred !== undefined || rec.neg === undefined) {
      // A client waits for each answer; one that does not is out of step.
      this.close(subId)
      this.error(subId, 'invalid: NEG-MSG sent before the previous one was answered')
      return
    }
    // The answer takes its turn (and waits for the person's budget, as a REQ's next slice
    // does); the reconciliation stays open meanwhile.
    this.whenBudget(subId, rec, () => this.answer(subId, rec, message))
  }

  close(subId: string): void {
    const rec = this.recs.get(subId)
    if (rec === undefined) return
    clearTimeout(rec.timer)
    rec.deferred?.()
    this.recs.delete(subId)
    const { open } = this.budget
    const n = (open.get(rec.payer) ?? 1) - 1
    if (n <= 0) open.delete(rec.payer)
    else open.set(rec.payer, n)
  }

  closeAll(): void {
    for (const subId of [...this.recs.keys()]) this.close(subId)
  }

  private answer(subId: string, rec: Reconciliation, message: string): void {
    let reply: string | null
    const startedAt = performance.now()
    try {
      if (!/^[0-9a-f]*$/.test(message) || message.length % 2 !== 0) {
        throw new Error('the message is not lowercase hex')
      }
      if (rec.neg === undefined) throw new Error('the set is not built yet')
      reply = rec.neg.reconcile(asResponderQuery(message))
      this.charge(rec, startedAt)
    } catch (err) {
      this.close(subId)
      this.error(subId, `invalid: ${err instanceof Error ? err.message : String(err)}`)
      return
    }
    this.peer.send(['NEG-MSG', subId, reply ?? doneMessage])
  }

  private idleTimer(subId: string): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.close(subId)
      this.error(subId, 'closed: reconciliation idle too long')
    }, this.limits.negIdleMs)
    timer.unref()
    return timer
  }

  private error(subId: string, reason: string): void {
    this.peer.send(['NEG-ERR', subId, reason])
  }
}
