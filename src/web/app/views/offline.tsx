import { offline } from '../lib/network.js'
import type { FleetClient } from '../lib/fleet-client.js'

/**
 * Says plainly when this page is offline: no network (or the page came from the cache because
 * its server could not be reached), or no hub of the fleet answers. The links reconnect by
 * themselves and catch up what was missed.
 */
export function OfflineBanner({ client }: { client: FleetClient | undefined }) {
  const links = client?.links.value ?? []
  const noHub =
    links.length > 0 && links.every((l) => l.state === 'waiting' || l.state === 'not allowed here')
  if (!offline.value && !noHub) return null
  return (
    <div class="offline" role="status">
      {offline.value ? (
        <>
          Offline: no network. The app dials the fleet again when the network is back, and catches
          up what it missed.{' '}
          <button type="button" class="link" onClick={() => location.reload()}>
            Try again
          </button>
        </>
      ) : (
        'Offline: no hub of the fleet answers. Reconnecting by itself; what was missed will be caught up.'
      )}
    </div>
  )
}
