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
