import { signal } from '@preact/signals'

/**
 * Whether this page is offline: the browser says so, or the page itself came from the service
 * worker's cache because the server could not be reached (navigator.onLine can be true on a
 * network that reaches nothing). While offline nothing is dialled, so nothing fails loudly; the
 * browser's `online` event, or "Try again", brings the app back.
 */
function servedFromCache(): boolean {
  const nav = performance.getEntriesByType('navigation')[0] as
    (PerformanceEntry & { deliveryType?: string }) | undefined
  return nav?.deliveryType === 'cache-storage'
}

export const offline = signal(!navigator.onLine || servedFromCache())

addEventListener('offline', () => (offline.value = true))
addEventListener('online', () => (offline.value = false))
