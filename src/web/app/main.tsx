import { render } from 'preact'
import './styles.css'
import { App } from './app.js'

// The shell works offline once the service worker has it (a secure context only: https, or
// http on 127.0.0.1 / localhost).
if ('serviceWorker' in navigator && window.isSecureContext) {
  navigator.serviceWorker.register('/sw.js', { scope: '/' }).catch((err: unknown) => {
    console.warn(`kith: no offline shell (${String(err)})`)
  })
}

render(<App />, document.getElementById('app')!)
