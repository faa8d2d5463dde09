import { PairError, type PairCode_ } from './protocol/errors.js'

/** A value some later message provides (the SAS being ready, the enrollment, the ACK). */
export interface Pending<T> {
  promise: Promise<T>
  resolve: (value: T) => void
}

export function pending<T = void>(): Pending<T> {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((r) => (resolve = r))
  return { promise, resolve }
}

/**
 * One pairing in progress, as both CLI sides run it: every wait (a message from the other side,
 * this side's person answering) ends the moment the pairing stops for any reason — the other
 * side's abort, a hub refusal, a disconnect, Ctrl-C here — so nobody sits at a prompt the other
 * side has already left.
 */
export class PairingRun {
  private failure: PairError | undefined
  private readonly stopped: Promise<never>
  private reject!: (err: PairError) => void

  constructor() {
    this.stopped = new Promise<never>((_, reject) => (this.reject = reject))
    // Observed through `until`; a stop nobody waits for is not an unhandled rejection.
    this.stopped.catch(() => undefined)
  }

  /** Stops the run with `err` (the first stop wins). */
  stop(err: PairError): void {
    if (this.failure) return
    this.failure = err
    this.reject(err)
  }

  get error(): PairError | undefined {
    return this.failure
  }

  /**
   * `p`, unless the run stops first, or `timeoutMs` passes (then it stops with `onTimeout`).
   * The timer never outlives the wait, so a finished command exits at once.
   */
  async until<T>(p: Promise<T>, timeoutMs?: number, onTimeout: PairCode_ = 'timeout'): Promise<T> {
    if (this.failure) throw this.failure
    let timer: NodeJS.Timeout | undefined
    try {
      return await Promise.race([
        p,
        this.stopped,
        ...(timeoutMs === undefined
          ? []
          : [
              new Promise<never>((_, reject) => {
                timer = setTimeout(() => {
                  const err = new PairError(onTimeout)
                  this.stop(err)
                  reject(err)
                }, timeoutMs)
              }),
            ]),
      ])
    } finally {
      clearTimeout(timer)
    }
  }

  /**
   * Runs `fn` with Ctrl-C (SIGINT) and SIGTERM turned into a stop (`cancelled`), so this side
   * still tells the other one before it exits; the default handling is back afterwards.
   */
  async withSignals<T>(onSignal: (err: PairError) => void, fn: () => Promise<T>): Promise<T> {
    const handler = () => {
      const err = new PairError('cancelled')
      onSignal(err)
      this.stop(err)
    }
    process.on('SIGINT', handler)
    process.on('SIGTERM', handler)
    try {
      return await fn()
    } finally {
      process.off('SIGINT', handler)
      process.off('SIGTERM', handler)
    }
  }
}
