import type { Filter } from '../events/filter.js'
import type { Connection } from './connection.js'
import { ReqJob, type SliceOutcome } from './req-scheduler.js'
import { StoredStream } from './stored-stream.js'

/**
 * The stored parts of one connection's REQs, sent a slice at a time: one REQ at a time, oldest
 * first, each slice paid from the person's work budget (`reqWork`) and paused while the client
 * has `reqHighWaterBytes` unread. Live events for a REQ still streaming are held and sent after
 * its EOSE, so none is missed or sent twice.
 */
export class ReqStreams {
  /** REQs whose stored part is still being sent, oldest first; only the first one runs. */
  private readonly jobs: ReqJob[] = []
  private drainWait: NodeJS.Timeout | undefined
  /** Set while this connection's person has used up their REQ work budget. */
  private budgetWait: NodeJS.Timeout | undefined

  /** Main-thread ms charged for slices so far (the frame that ran one inline is not charged twice). */
  chargedMs = 0

  constructor(private readonly conn: Connection) {}

  /**
   * Streams the stored part of REQ `subId`, whose live subscription has just started. The common
   * small REQ is answered in this turn; a large one, or one queued behind another of this
   * connection, goes on in slices on later turns. What is sent in the turn frames are read has
   * one allowance a turn, hub-wide (`ReqScheduler.inlineLeft`): REQ frames read together (one
   * client's burst) must not each take a full slice while everyone else's frames wait.
   */
  start(subId: string, filters: Filter[]): void {
    const { ctx, gate } = this.conn
    const stream = new StoredStream(ctx.store, filters, ctx.limits, () => gate.hidden(ctx.now()))
    this.jobs.push(new ReqJob(subId, stream))
    if (this.jobs.length !== 1) return
    const { reqs } = ctx
    const left = reqs.inlineLeft()
    if (left <= 0) {
      reqs.add(this.conn)
      return
    }
    const startedAt = performance.now()
    const outcome = this.runSlice(left)
    reqs.spentInline(performance.now() - startedAt)
    if (outcome === 'more') reqs.add(this.conn)
  }

  /** A live event for subscription `subId`: sent now, or held while that REQ's stored part streams. */
  deliver(subId: string, id: string, frame: string): void {
    const { output } = this.conn
    if (this.jobs.length > 0) {
      const job = this.jobs.find((j) => j.subId === subId)
      if (job !== undefined) {
        output.heldBytes += job.hold(id, frame)
        output.checkUnread()
        return
      }
    }
    output.sendRaw(frame)
  }

  /** Sends a slice of the oldest streaming REQ (see ReqScheduler). */
  runSlice(sliceMs = this.conn.ctx.limits.reqSliceMs): SliceOutcome {
    const job = this.jobs[0]
    if (job === undefined || this.conn.ended) return 'idle'
    if (this.budgetWait !== undefined || this.drainWait !== undefined) return 'blocked'
    const { limits, reqWork } = this.conn.ctx
    if (this.conn.output.buffered >= limits.reqHighWaterBytes) {
      this.waitForDrain()
      return 'blocked'
    }
    const payer = this.conn.payer()
    const startedAt = performance.now()
    const wait = reqWork.wait(payer, Date.now())
    if (wait > 0) {
      // Out of budget: resume when it has refilled enough for a slice.
      this.budgetWait = setTimeout(() => {
        this.budgetWait = undefined
        if (!this.conn.ended) this.conn.ctx.reqs.add(this.conn)
      }, wait)
      return 'blocked'
    }
    try {
      return this.slice(job, sliceMs)
    } finally {
      const spent = performance.now() - startedAt
      this.chargedMs += spent
      reqWork.charge(payer, spent, Date.now())
    }
  }

  /**
   * Sends rows until `reqSliceBytes` are sent or `sliceMs` is spent (a page read may overrun it
   * once: see `StoredStream.step`), whichever comes first.
   */
  private slice(job: ReqJob, sliceMs: number): SliceOutcome {
    const { conn } = this
    const { limits } = conn.ctx
    const { output } = conn
    const prefix = `["EVENT",${JSON.stringify(job.subId)},`
    const startedAt = performance.now()
    let sent = 0
    let done: boolean
    try {
      done = job.stream.step(
        (row) => {
          output.heldBytes -= job.forget(row.id)
          output.sendRaw(`${prefix}${row.raw}]`)
          sent += row.raw.length
        },
        () =>
          !conn.ended && sent < limits.reqSliceBytes && output.buffered < limits.reqHighWaterBytes,
        () => output.flush(),
        () => performance.now() - startedAt >= sliceMs,
      )
    } catch (err) {
      conn.ctx.log(`query failed: ${String(err)}`)
      this.finish(job)
      conn.ctx.subs.delete(conn, job.subId)
      conn.send(['CLOSED', job.subId, 'error: query failed'])
      return this.jobs.length > 0 ? 'more' : 'idle'
    }
    if (conn.ended) return 'idle'
    if (done) {
      this.finish(job)
      conn.send(['EOSE', job.subId])
      for (const frame of job.held.values()) output.sendRaw(frame)
    }
    return this.jobs.length > 0 ? 'more' : 'idle'
  }

  private finish(job: ReqJob): void {
    const at = this.jobs.indexOf(job)
    if (at >= 0) this.jobs.splice(at, 1)
    this.conn.output.heldBytes -= job.heldBytes
  }

  /** Stops streaming REQ `subId`, if it still is. */
  cancel(subId: string): void {
    const job = this.jobs.find((j) => j.subId === subId)
    if (job === undefined) return
    this.finish(job)
    if (this.jobs.length > 0 && this.drainWait === undefined && this.budgetWait === undefined) {
      this.conn.ctx.reqs.add(this.conn)
    }
  }

  /**
   * The client has `reqHighWaterBytes` unread: resume when its socket drains, and close it if it
   * does not read for `slowReaderMs`.
   */
  private waitForDrain(): void {
    if (this.drainWait !== undefined) return
    const { conn } = this
    // Its pages would wait as long as the client does not read.
    this.jobs[0]?.stream.release()
    const { slowReaderMs } = conn.ctx.limits
    const onDrain = () => {
      clearTimeout(this.drainWait)
      this.drainWait = undefined
      if (!conn.ended) conn.ctx.reqs.add(conn)
    }
    this.drainWait = setTimeout(() => {
      conn.socket.off('drain', onDrain)
      this.drainWait = undefined
      conn.closeSlow(`nothing read for ${slowReaderMs} ms while a REQ waits`)
    }, slowReaderMs)
    conn.socket.once('drain', onDrain)
  }

  /** Forgets every REQ's stored part (the connection ended). */
  end(): void {
    clearTimeout(this.drainWait)
    clearTimeout(this.budgetWait)
    this.jobs.length = 0
    this.conn.output.heldBytes = 0
    this.conn.ctx.reqs.remove(this.conn)
  }
}
