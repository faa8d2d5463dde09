import { KithError, toExitCode } from '../errors.js'
import { kithVersion } from '../version.js'
import { stdio, type Out } from './io.js'

export const mainHelp = `kith ${kithVersion}: run AI coding agents across your machines

Usage: kith COMMAND [options]   (kith COMMAND --help for details)

Commands:
  init            create this machine's device key (and, on your first machine, your owner key)
  whoami          show owner, device and hubs
  pair            enroll a new machine: shows a QR/code and a 6-digit check
  join CODE       join a fleet on a new machine with a code from kith pair
  fleet           share this fleet with other people: invite, join, members, remove
  hub             run a standalone hub (Nostr relay with NIP-42 auth)
  hub add URL     use a hub; hub list, hub rm URL
  hub key, hub grant REQUEST   a hub's own key, and the founder's grant that lets it peer
  device          list or revoke this fleet's devices
  agent           add, list or revoke agent keys hosted on this node
  channel         create a private channel (--private --members), list channels
  revoke NPUB     revoke any key below you, with everything beneath it
  up              run this machine's node (links to hubs, or embeds one)
  chat [#ch]      interactive chat through the running node
  send #ch TEXT   post a message (queued in the outbox if the node is not running)
  log [#ch]       print messages (--follow, --json)
  status          the node's hubs, lag, cursors, outbox, agents
  open            open the web app the running node serves (a browser paired as a device)
  permit ID N     answer an agent's permission request with option N
  cancel #ch      cancel the turn an agent is running in a channel
  watch [AGENT]   an agent's side transcript, live (tool calls, thoughts, messages)

State lives in KITH_HOME (default ~/.kith). Exit codes: 0 ok, 1 failed (or a hub did not take
a change; it is kept and sent on the next sync), 2 usage, 3 not initialised (run kith init),
4 insecure key file, 5 no such agent here.`

/**
 * Each command's module is loaded only when it runs: a long-lived `kith hub` then carries none
 * of the client-side code (measured: ~20 MB less peak RSS under load), and every command starts
 * faster.
 */
async function dispatch(command: string, rest: string[], out: Out): Promise<number> {
  switch (command) {
    case 'init':
      return (await import('./commands/init.js')).runInit(rest, out)
    case 'whoami':
      return (await import('./commands/whoami.js')).runWhoami(rest, out)
    case 'hub': {
      const sub = rest[0]
      if (sub === 'add' || sub === 'list' || sub === 'rm') {
        return (await import('./commands/hub-config.js')).runHubConfig(sub, rest.slice(1), out)
      }
      if (sub === 'key')
        return (await import('./commands/hub-peer.js')).runHubKey(rest.slice(1), out)
      if (sub === 'grant') {
        return (await import('./commands/hub-peer.js')).runHubGrant(rest.slice(1), out)
      }
      return (await import('./commands/hub-serve.js')).runHubServe(rest, out)
    }
    case 'fleet':
      return (await import('./commands/fleet.js')).runFleet(rest, out)
    case 'device':
      return (await import('./commands/device.js')).runDevice(rest, out)
    case 'agent':
      return (await import('./commands/agent.js')).runAgent(rest, out)
    case 'channel':
      return (await import('./commands/channel.js')).runChannel(rest, out)
    case 'revoke':
      return (await import('./commands/revoke.js')).runRevoke(rest, out)
    case 'pair':
      return (await import('./commands/pair.js')).runPair(rest, out)
    case 'join':
      return (await import('./commands/join.js')).runJoin(rest, out)
    case 'watch':
      return (await import('./commands/watch.js')).runWatch(rest, out)
    case 'cancel':
      return (await import('./commands/cancel.js')).runCancel(rest, out)
    case 'permit':
      return (await import('./commands/permit.js')).runPermit(rest, out)
    case 'up':
      return (await import('./commands/up.js')).runUp(rest, out)
    case 'send':
      return (await import('./commands/send.js')).runSend(rest, out)
    case 'chat':
      return (await import('./commands/chat.js')).runChat(rest, out)
    case 'log':
      return (await import('./commands/log.js')).runLog(rest, out)
    case 'status':
      return (await import('./commands/status.js')).runStatus(rest, out)
    case 'open':
      return (await import('./commands/open.js')).runOpen(rest, out)
    default:
      throw new KithError('usage', `unknown command ${JSON.stringify(command)}\n\n${mainHelp}`)
  }
}

export async function main(argv: string[], out: Out = stdio): Promise<number> {
  const [command, ...rest] = argv
  try {
    switch (command) {
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        out.line(mainHelp)
        return command === undefined ? 2 : 0
      case '--version':
      case 'version':
        out.line(kithVersion)
        return 0
      default:
        return await dispatch(command, rest, out)
    }
  } catch (err) {
    if (err instanceof KithError) out.err(`kith: ${err.message}`)
    else {
      out.err(
        `kith: unexpected error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`,
      )
    }
    return toExitCode(err)
  }
}
