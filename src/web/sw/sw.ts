/// <reference lib="webworker" />
/**
 * The web app's service worker: the shell (index.html and every file the build emitted) loads
 * without a network, so the app opens offline and says so; hub connections are never touched.
 * The precache list is written into this file at build time (vite.web.config.ts), so a new
 * build is a new worker, and the old cache is dropped when it takes over. It is built on its
 * own, as one classic script (a service worker cannot share the app's module chunks). Web Push
 * and the actions on its notifications are in push.ts.
 */
import './push.js'

const sw = self as unknown as ServiceWorkerGlobalScope

// Replaced by the build (a `define`) with the array of emitted paths.
declare const __KITH_PRECACHE__: string[]
const precache = __KITH_PRECACHE__
const cacheName = `kith-shell-${hashOf(precache.join('\n'))}`

/** A short, stable name for this build's cache (FNV-1a over the file list, which holds hashes). */
function hashOf(text: string): string {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return (h >>> 0).toString(16)
}

sw.addEventListener('install', (event) => {
  event.waitUntil(
    (async () => {
      const cache = await caches.open(cacheName)
      await cache.addAll(precache)
      await sw.skipWaiting()
    })(),
  )
})

sw.addEventListener('activate', (event) => {
  event.waitUntil(
    (async () => {
      for (const name of await caches.keys()) if (name !== cacheName) await caches.delete(name)
      await sw.clients.claim()
    })(),
  )
})

sw.addEventListener('fetch', (event) => {
  const request = event.request
  if (request.method !== 'GET') return
  const url = new URL(request.url)
  if (url.origin !== sw.location.origin) return
  if (request.mode === 'navigate') {
    // The page itself: fresh from the server when it answers (its CSP names the current hubs),
    // else the cached shell.
    event.respondWith(
      fetch(request).catch(async () => {
        const cached = await caches.match('/', { cacheName })
        return cached ?? Response.error()
      }),
    )
    return
  }
  if (!precache.includes(url.pathname)) return
  // Hashed assets never change: the cache answers first.
  event.respondWith(caches.match(request, { cacheName }).then((hit) => hit ?? fetch(request)))
})
