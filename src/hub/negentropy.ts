import { nip77 } from 'nostr-tools'
import type { Filter } from '../events/filter.js'
import type { EventStore, HideRule } from '../store/event-store.js'
import type { HubLimits } from './limits.js'
import type { WorkBudget } from './req-scheduler.js'

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
  const bytes = Uint8Array.from(hex.match(/../g) ?? [], (b) => parseInt(b, 16))
  let at = 0
  const out: number[] = []
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
  const copy = (from: number) => out.push(...bytes.subarray(from, at))
  need(1)
  out.push(bytes[at++]!)
  while (at < bytes.length) {
    const boundStart = at
    varint() // the bound's timestamp
    const idLength = varint()
    if (idLength > 32) throw new Error('bound key too long')
    need(idLength)
    at += idLength
    copy(boundStart)
    const modeStart = at
    const mode = varint()
    if (mode === modeIdList) {
      const count = varint()
      need(count * 32)
      at += count * 32
      out.push(modeFingerprint, ...new Uint8Array(16))
    } else {
      if (mode === modeFingerprint) {
        need(16)
        at += 16
      } else if (mode !== 0) throw new Error('unexpected mode')
      copy(modeStart)
    }
  }
  return out.map((b) => b.toString(16).padStart(2, '0')).join('')
}

interface Session {
  neg: nip77.Negentropy
  timer: NodeJS.Timeout
  payer: string
  /** A NEG-MSG waiting for its person's work budget to refill. */
  deferred?: NodeJS.Timeout | undefined
}

/**
 * NIP-77 set reconciliation over the events a member may read: the same filter, private-channel
 * rules and store as a REQ. The hub only answers (a client initiates); the set of (created_at, id)
 * is taken once, at NEG-OPEN, and held until NEG-CLOSE, the idle limit or the connection's end.
 */
export class NegSessions {
  private readonly sessions = new Map<string, Session>()

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
    if (this.sessions.size >= this.limits.negMaxSessions) {
      this.error(
        subId,
        `blocked: at most ${this.limits.negMaxSessions} reconciliations at once on a connection`,
      )
      return
    }
    const payer = this.peer.payer()
    const { work, open, maxOpenPerPerson } = this.budget
    if ((open.get(payer) ?? 0) >= maxOpenPerPerson) {
      this.error(
        subId,
        `blocked: at most ${maxOpenPerPerson} reconciliations at once per person (negentropy_max_sessions_per_person)`,
      )
      return
    }
    // Building the set is the costly part: it waits for none, so it needs budget left now.
    const wait = work.wait(payer, Date.now())
    if (wait > 0) {
      this.error(
        subId,
        `rate-limited: work: this person's REQ and reconciliation work is over ${this.limits.reqWorkMsPerSecond} ms/s; retry in ${wait} ms`,
      )
      return
    }
    const startedAt = performance.now()
    const storage = new nip77.NegentropyStorageVector()
    // A reconciliation covers the whole match: NIP-77 has no use for a REQ's limit.
    const unlimited: Filter = { ...filter }
    delete unlimited.limit
    const cursor = this.store.openCursor(
      unlimited,
      this.limits.negMaxItems + 1,
      this.peer.hidden(),
      undefined,
    )
    let count = 0
    for (const row of cursor) {
      if (++count > this.limits.negMaxItems) {
        cursor.return?.()
        work.charge(payer, performance.now() - startedAt, Date.now())
        this.error(
          subId,
          `blocked: the filter matches more than ${this.limits.negMaxItems} events; narrow it (since/until)`,
        )
        return
      }
      storage.insert(row.created_at, row.id)
    }
    storage.seal()
    const neg = new nip77.Negentropy(storage, this.limits.maxFrameBytes - 1024)
    const session: Session = { neg, timer: this.idleTimer(subId), payer }
    this.sessions.set(subId, session)
    open.set(payer, (open.get(payer) ?? 0) + 1)
    work.charge(payer, performance.now() - startedAt, Date.now())
    this.answer(subId, session, message)
  }

  /** NEG-MSG: the client's next message in an open reconciliation. */
  message(subId: string, message: string): void {
    const session = this.sessions.get(subId)
    if (session === undefined) {
      this.error(subId, 'closed: no reconciliation open under this id')
      return
    }
    session.timer.refresh()
    if (session.deferred !== undefined) {
      // A client waits for each answer; one that does not is out of step.
      this.close(subId)
      this.error(subId, 'invalid: NEG-MSG sent before the previous one was answered')
      return
    }
    const wait = this.budget.work.wait(session.payer, Date.now())
    if (wait === 0) {
      this.answer(subId, session, message)
      return
    }
    // Out of budget: the answer waits (as a REQ's next slice does); the session stays open.
    session.deferred = setTimeout(() => {
      session.deferred = undefined
      if (this.sessions.get(subId) === session) this.answer(subId, session, message)
    }, wait)
  }

  close(subId: string): void {
    const session = this.sessions.get(subId)
    if (session === undefined) return
    clearTimeout(session.timer)
    clearTimeout(session.deferred)
    this.sessions.delete(subId)
    const { open } = this.budget
    const n = (open.get(session.payer) ?? 1) - 1
    if (n <= 0) open.delete(session.payer)
    else open.set(session.payer, n)
  }

  closeAll(): void {
    for (const subId of [...this.sessions.keys()]) this.close(subId)
  }

  private answer(subId: string, session: Session, message: string): void {
    let reply: string | null
    const startedAt = performance.now()
    try {
      if (!/^[0-9a-f]*$/.test(message) || message.length % 2 !== 0) {
        throw new Error('the message is not lowercase hex')
      }
      reply = session.neg.reconcile(asResponderQuery(message))
      this.budget.work.charge(session.payer, performance.now() - startedAt, Date.now())
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
