import { useEffect } from 'preact/hooks'
import { boot, open, start } from './lib/boot.js'
import { OfflineBanner } from './views/offline.js'
import { Pairing } from './views/pairing.js'
import { Shell } from './views/shell.js'

export function App() {
  useEffect(() => void start(), [])
  const b = boot.value
  return (
    <>
      <OfflineBanner client={b.state === 'ready' ? b.client : undefined} />
      {b.state === 'loading' && <p class="boot">Kith is loading…</p>}
      {b.state === 'failed' && (
        <main class="center">
          <h1>Kith cannot start here</h1>
          <p class="error">{b.message}</p>
          <p>
            This page keeps its device key in IndexedDB: a private window, or a browser that blocks
            site storage, cannot keep it.
          </p>
        </main>
      )}
      {b.state === 'pairing' && <Pairing onPaired={(d) => void open(d)} />}
      {b.state === 'ready' && <Shell client={b.client} />}
    </>
  )
}
