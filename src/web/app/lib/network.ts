import { signal } from '@preact/signals'

/**
 * Whether this page is offline: the browser says so, or the page itself came from the service
 * worker's cache because the server could not be reached (navigator.onLine can be true on a
 * network that reaches nothing). While offline nothing is dialled, so nothing fails loudly; the
 * browser's `online` event, a probe of the page's own server, or "Try again" brings the app back.
 */
function servedFromCache(): boolean {
  const nav = performance.getEntriesByType('navigation')[0] as
    (PerformanceEntry & { deliveryType?: string }) | undefined
  return nav?.deliveryType === 'cache-storage'
}

export const offline = signal(!navigator.onLine || servedFromCache())

addEventListener('offline', () => (offline.value = true))
addEventListener('online', () => (offline.value = false))

/** How often an offline page that the browser calls online asks its server whether it is back. */
const probeMs = 5_000

/**
 * A page served from the cache hears no `online` event when the browser never thought it was
 * offline, and browsers differ in whether they fire one when the network returns (Chromium 156
 * does at once, 150 did not). So while the page is offline but the browser says it is online,
 * it asks its own server (a HEAD, which the service worker lets through) every few seconds.
 */
setInterval(() => {
  if (!offline.value || !navigator.onLine) return
  fetch(location.origin + '/', { method: 'HEAD', cache: 'no-store' }).then(
    (res) => {
      if (res.ok) offline.value = false
    },
    // Still unreachable: the banner stays, and the next probe asks again.
    () => undefined,
  )
}, probeMs)
