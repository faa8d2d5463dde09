import { resolveKithHome } from '../../identity/home.js'
import { loadIdentity } from '../../identity/keys.js'
import { declare } from '../declare.js'
import type { Out } from '../io.js'
import { npub } from '../key-text.js'

export const whoamiCommand = declare({
  name: 'whoami',
  summary: 'show owner, device and hubs',
  usage: ['kith whoami [--json]'],
  arity: { min: 0, max: 0, error: 'kith whoami takes no arguments' },
  options: { json: { type: 'boolean', description: 'print as JSON' } },
  about: `Shows this machine's identity: the owner it belongs to, its device key, its name and the hubs it
uses. Public keys only; secrets are never printed.`,
})

export function runWhoami(argv: string[], out: Out): number {
  const parsed = whoamiCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values } = parsed
  const id = loadIdentity(resolveKithHome())
  const owner = id.ownerPubkey === undefined ? null : npub(id.ownerPubkey)
  if (values.json) {
    out.json({
      home: id.home,
      name: id.config.name,
      owner,
      ownerHex: id.ownerPubkey ?? null,
      ownerKeyHere: id.ownerSecret !== undefined,
      device: npub(id.devicePubkey),
      deviceHex: id.devicePubkey,
      hubs: id.config.hubs,
    })
    return 0
  }
  out.line(`name    ${id.config.name}`)
  out.line(
    `owner   ${owner ?? 'none'}${id.ownerSecret !== undefined ? '  (owner key on this machine)' : ''}`,
  )
  out.line(`device  ${npub(id.devicePubkey)}`)
  out.line(
    `hubs    ${id.config.hubs.length === 0 ? 'none (kith up embeds one)' : id.config.hubs.join(', ')}`,
  )
  out.line(`home    ${id.home}`)
  return 0
}

/** What the command index loads. */
export { whoamiCommand as command, runWhoami as run }
