import { signal } from '@preact/signals'

/**
 * Where the app is, in the URL's hash (so a reload, the back button and a bookmark keep it):
 * `#/` the channel list, `#/c/NAME` a channel, `#/c/NAME/t/ID` a thread in it, `#/fleet`,
 * `#/audit`.
 */
export type Route =
  | { view: 'home' }
  | { view: 'channel'; channel: string; thread?: string }
  | { view: 'fleet' }
  | { view: 'audit' }

function parse(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent)
  if (parts[0] === 'fleet') return { view: 'fleet' }
  if (parts[0] === 'audit') return { view: 'audit' }
  if (parts[0] === 'c' && parts[1] !== undefined && /^[a-z0-9][a-z0-9_.-]{0,63}$/.test(parts[1])) {
    return parts[2] === 't' && parts[3] !== undefined && /^[0-9a-f]{64}$/.test(parts[3])
      ? { view: 'channel', channel: parts[1], thread: parts[3] }
      : { view: 'channel', channel: parts[1] }
  }
  return { view: 'home' }
}

export const route = signal<Route>(parse(location.hash))
addEventListener('hashchange', () => (route.value = parse(location.hash)))

export function href(r: Route): string {
  if (r.view === 'fleet') return '#/fleet'
  if (r.view === 'audit') return '#/audit'
  if (r.view === 'channel')
    return `#/c/${r.channel}${r.thread === undefined ? '' : `/t/${r.thread}`}`
  return '#/'
}

export function go(r: Route): void {
  location.hash = href(r)
}
