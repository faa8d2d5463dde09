import { startOver } from '../lib/boot.js'
import type { FleetClient } from '../lib/fleet-client.js'

/** Shown, in place of everything, once this device has been revoked. */
export function Removed({ client }: { client: FleetClient }) {
  return (
    <main class="center removed">
      <div role="alert">
        <h1>This browser was removed from the fleet</h1>
        <p>
          Its device key ({client.device.record.name}) was revoked, or its person was removed. The
          hubs refuse it at once: it can no longer read or post anything, and it will not reconnect.
        </p>
        <p class="muted">{client.model.removed.value}</p>
        <p>
          To use Kith here again, forget this key and pair anew (kith pair on a machine with your
          owner key).
        </p>
        <button type="button" onClick={() => void startOver()}>
          Forget this device and pair again
        </button>
      </div>
    </main>
  )
}
