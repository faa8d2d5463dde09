import type { Out } from './io.js'

/**
 * Resolves once `stop` has run after SIGINT or SIGTERM. A second signal exits at once with
 * 128 + the signal number, as a supervisor expects.
 */
export function runUntilSignal(out: Out, label: string, stop: () => Promise<void>): Promise<void> {
  return new Promise<void>((resolve) => {
    let stopping = false
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopping) process.exit(128 + (signal === 'SIGINT' ? 2 : 15))
      stopping = true
      out.err(`${label}: ${signal}, shutting down`)
      stop().then(resolve, (err: unknown) => {
        out.err(`${label}: error while shutting down: ${String(err)}`)
        resolve()
      })
    }
    process.on('SIGINT', onSignal)
    process.on('SIGTERM', onSignal)
  })
}

/**
 * Waits until `stopped` settles, or until a hub's check in the background (`Hub.checked`) finds
 * its database damaged, whichever comes first: the damage, or undefined once stopped.
 */
export function stoppedOrDamaged<E>(
  stopped: Promise<void>,
  checked: Promise<E | undefined> | undefined,
): Promise<E | undefined> {
  const untilStopped = stopped.then(() => undefined)
  if (checked === undefined) return untilStopped
  return Promise.race([untilStopped, checked.then((err) => err ?? untilStopped)])
}
