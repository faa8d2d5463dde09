import { signal } from '@preact/signals'
import { forgetDevice, loadDevice, type Device } from './device.js'
import { FleetClient } from './fleet-client.js'

/** The app's life: loading, pairing (no device yet), ready (a client), or failed. */
export type Boot =
  | { state: 'loading' }
  | { state: 'pairing' }
  | { state: 'ready'; client: FleetClient }
  | { state: 'failed'; message: string }

export const boot = signal<Boot>({ state: 'loading' })

/** Starts the fleet client of a paired device: its links, its outbox, its fleet. */
export async function open(device: Device): Promise<void> {
  performance.mark('kith-phase-device')
  const client = new FleetClient(device)
  boot.value = { state: 'ready', client }
  await client.start()
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
  if (boot.value.state === 'ready') boot.value.client.stop()
  await forgetDevice()
  boot.value = { state: 'pairing' }
}
