import { useSignal } from '@preact/signals'
import { useEffect, useRef } from 'preact/hooks'
import {
  decodePairingCode,
  joinOverLane,
  normalizeRelayUrl,
  PairError,
  RelayClient,
  RelayPairingLane,
  servedByVerdict,
  tagValue,
  type PairingCode,
} from '../../../browser-core.js'
import { newDeviceKey, saveDevice, type Device } from '../lib/device.js'
import { cspAllowedHubs, servedByServer } from '../lib/server-headers.js'
import { cameraAvailable, scanCamera, scanImage } from '../lib/qr.js'
import { formatSas, shortNpub } from './format.js'

type Step =
  | { at: 'enter'; error?: string }
  | { at: 'scan' }
  | { at: 'checking'; code: PairingCode }
  | { at: 'join'; code: PairingCode; servedBy: string }
  | { at: 'connecting'; code: PairingCode }
  | { at: 'compare'; code: PairingCode; sas: string; answer: (same: boolean) => void }
  | { at: 'waiting'; code: PairingCode }
  | { at: 'failed'; message: string }

/** The name this browser proposes (the inviter's `kith pair --name` wins). */
function defaultName(): string {
  return /Mobi|Android|iPhone/i.test(navigator.userAgent) ? 'phone' : 'browser'
}

/**
 * Pairing: this browser is the joiner of kith-pair/1. It makes its own device key, reads the code
 * (camera or paste), shows the same 6 digits as the laptop, proves its key, and keeps the grant
 * it receives. The owner key never comes near it.
 */
export function Pairing({ onPaired }: { onPaired: (device: Device) => void }) {
  const step = useSignal<Step>({ at: 'enter' })
  const text = useSignal('')
  const name = useSignal(defaultName())

  const read = (raw: string) => {
    try {
      const code = decodePairingCode(raw)
      if (code.role !== 'device') {
        step.value = {
          at: 'enter',
          error:
            'This code invites a person into a fleet (kith fleet invite); a browser joins as a device: on the laptop run kith pair --name phone.',
        }
        return
      }
      step.value = { at: 'checking', code }
      void checkServer(code)
    } catch (err) {
      step.value = { at: 'enter', error: err instanceof Error ? err.message : String(err) }
    }
  }

  // The key this browser makes lives in this origin's storage: whoever serves the origin's code
  // can use it. Join only a fleet whose person owns the machine that served this page.
  const checkServer = async (code: PairingCode) => {
    const served = await servedByServer()
    if (served === 'offline') {
      step.value = {
        at: 'failed',
        message: 'This browser cannot reach the machine that served this page; pairing needs it.',
      }
      return
    }
    const verdict = servedByVerdict(served, code.owner, code.name)
    step.value = verdict.ok
      ? { at: 'join', code, servedBy: verdict.says }
      : { at: 'failed', message: verdict.says }
  }

  const join = async (code: PairingCode) => {
    step.value = { at: 'connecting', code }
    const hub = normalizeRelayUrl(code.hub)
    const allowed = await cspAllowedHubs()
    if (allowed !== undefined && !allowed.has(hub)) {
      step.value = {
        at: 'failed',
        message: `This page may not connect to ${hub}: it is not one of the hubs of the node that serves it (${[...allowed].join(', ') || 'none'}). Pair with kith pair --hub set to one of those, or open the app that hub serves.`,
      }
      return
    }
    const key = newDeviceKey()
    try {
      const client = await RelayClient.connect(new WebSocket(hub), { url: hub })
      const lane = await RelayPairingLane.open(client, code.pid)
      let device: Device | undefined
      await joinOverLane(code, lane, {
        compare: (sas) =>
          new Promise<boolean>((resolve) => {
            step.value = {
              at: 'compare',
              code,
              sas,
              answer: (same) => {
                step.value = { at: 'waiting', code }
                resolve(same)
              },
            }
          }),
        key: () => ({ ...key, name: name.value.trim() || defaultName() }),
        enroll: async (enrollment, hubs) => {
          const granted = tagValue(enrollment.grant, 'name') ?? name.value
          device = await saveDevice(key, code, enrollment, hubs, granted)
        },
      })
      if (device !== undefined) onPaired(device)
    } catch (err) {
      key.secret.fill(0)
      step.value = {
        at: 'failed',
        message:
          err instanceof PairError
            ? err.message
            : `Pairing failed: ${err instanceof Error ? err.message : String(err)}`,
      }
    }
  }

  const s = step.value
  return (
    <main class="center pairing">
      <h1>Pair this browser</h1>
      {(s.at === 'enter' || s.at === 'scan') && (
        <>
          <p>
            This browser becomes a device of your fleet, with a key of its own made here. On a
            machine that holds your owner key run
          </p>
          <pre class="cmd">kith pair --name phone</pre>
          <p>then scan its QR code or paste its code below.</p>
          {s.at === 'scan' ? (
            <Scanner onCode={read} onCancel={() => (step.value = { at: 'enter' })} />
          ) : (
            <div class="row">
              {cameraAvailable() && (
                <button type="button" onClick={() => (step.value = { at: 'scan' })}>
                  Scan the QR code
                </button>
              )}
              <label class="button secondary">
                Read a picture of it
                <input
                  type="file"
                  accept="image/*"
                  class="hidden"
                  onChange={(e) => {
                    const file = e.currentTarget.files?.[0]
                    if (file === undefined) return
                    scanImage(file).then(
                      (t) =>
                        t === undefined
                          ? (step.value = { at: 'enter', error: 'No QR code in that picture.' })
                          : read(t),
                      (err: unknown) =>
                        (step.value = { at: 'enter', error: `Cannot read it: ${String(err)}` }),
                    )
                  }}
                />
              </label>
            </div>
          )}
          <form
            class="paste"
            onSubmit={(e) => {
              e.preventDefault()
              read(text.value)
            }}
          >
            <label for="code">Pairing code</label>
            <textarea
              id="code"
              rows={3}
              placeholder="kith-pair1:…"
              autocomplete="off"
              spellcheck={false}
              value={text.value}
              onInput={(e) => (text.value = e.currentTarget.value)}
            />
            <button type="submit" disabled={text.value.trim() === ''}>
              Continue
            </button>
          </form>
          {s.at === 'enter' && s.error !== undefined && <p class="error">{s.error}</p>}
        </>
      )}
      {s.at === 'join' && (
        <form
          class="card"
          onSubmit={(e) => {
            e.preventDefault()
            void join(s.code)
          }}
        >
          <p>
            Join the fleet of <strong>{s.code.name}</strong> ({shortNpub(s.code.owner)}) through the
            hub <code>{s.code.hub}</code>, as a device?
          </p>
          <p class="muted">{s.servedBy}</p>
          <label for="device-name">This browser's name (the laptop may choose another)</label>
          <input
            id="device-name"
            value={name.value}
            maxLength={64}
            onInput={(e) => (name.value = e.currentTarget.value)}
          />
          <div class="row">
            <button type="submit">Join</button>
            <button type="button" class="secondary" onClick={() => (step.value = { at: 'enter' })}>
              Cancel
            </button>
          </div>
        </form>
      )}
      {s.at === 'checking' && <p class="muted">Asking which machine served this page…</p>}
      {s.at === 'connecting' && <p class="muted">Reaching {s.code.hub}…</p>}
      {s.at === 'compare' && (
        <div class="card compare">
          <p>Compare with the other screen; do not type it anywhere:</p>
          <p class="sas" aria-label="six digits">
            {formatSas(s.sas)}
          </p>
          <div class="row">
            <button type="button" onClick={() => s.answer(true)}>
              Same digits
            </button>
            <button type="button" class="danger" onClick={() => s.answer(false)}>
              Different
            </button>
          </div>
        </div>
      )}
      {s.at === 'waiting' && (
        <p class="muted">Answer y on the other screen too; waiting for its grant…</p>
      )}
      {s.at === 'failed' && (
        <div class="card">
          <p class="error">{s.message}</p>
          <button
            type="button"
            onClick={() => {
              text.value = ''
              step.value = { at: 'enter' }
            }}
          >
            Start over
          </button>
        </div>
      )}
    </main>
  )
}

function Scanner({ onCode, onCancel }: { onCode: (t: string) => void; onCancel: () => void }) {
  const video = useRef<HTMLVideoElement>(null)
  const error = useSignal<string | undefined>(undefined)
  useEffect(() => {
    let stop: (() => void) | undefined
    let cancelled = false
    if (video.current !== null)
      scanCamera(video.current, onCode).then(
        (s) => (cancelled ? s() : (stop = s)),
        (err: unknown) => (error.value = `No camera: ${String(err)}`),
      )
    return () => {
      cancelled = true
      stop?.()
    }
  }, [])
  return (
    <div class="scanner">
      <video ref={video} muted playsInline />
      {error.value !== undefined && <p class="error">{error.value}</p>}
      <button type="button" class="secondary" onClick={onCancel}>
        Stop the camera
      </button>
    </div>
  )
}
