import { signal } from '@preact/signals'
import { forgetDevice, loadDevice, type Device } from './device.js'
import { Session } from './session.js'

/** The app's life: loading, pairing (no device yet), ready (a session), or failed. */
export type Boot =
  | { state: 'loading' }
  | { state: 'pairing' }
  | { state: 'ready'; session: Session }
  | { state: 'failed'; message: string }

export const boot = signal<Boot>({ state: 'loading' })

/** Starts the session of a paired device: its links, its outbox, its fleet. */
export async function open(device: Device): Promise<void> {
  performance.mark('kith-phase-device')
  const session = new Session(device)
  boot.value = { state: 'ready', session }
  await session.start()
}

export async function start(): Promise<void> {
  try {
    const device = await loadDevice()
    if (device === undefined) boot.value = { state: 'pairing' }
    else await open(device)
  } catch (err) {
    boot.value = { state: 'failed', message: err instanceof Error ? err.message : String(err) }
  }
}

/** Forgets this browser's key and grant, and starts over with a new pairing. */
export async function startOver(): Promise<void> {
  if (boot.value.state === 'ready') boot.value.session.stop()
  await forgetDevice()
  boot.value = { state: 'pairing' }
}
