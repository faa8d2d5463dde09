import { KithError } from '../../errors.js'
import { parseCommandArgs } from '../args.js'
import type { Out } from '../io.js'
import { connectDaemon } from './chat-common.js'

export const permitHelp = `Usage: kith permit REQUEST OPTION

Answers an agent's permission request (the card in kith chat): REQUEST is its id (the first
characters are enough, if no other request starts with them), OPTION the option's number on
the card or its option id. Needs the node running (kith up). Only the agent's owner (any of
their devices) may approve, unless its approvers policy says more; the hosting node applies the
first valid answer it receives. An answer to a request that has expired, or that you (from any
of your devices) already answered, is refused here.`

export async function runPermit(argv: string[], out: Out): Promise<number> {
  const { values, positionals } = parseCommandArgs(
    argv,
    { help: { type: 'boolean', short: 'h' } },
    permitHelp,
  )
  if (values.help) {
    out.line(permitHelp)
    return 0
  }
  if (positionals.length !== 2)
    throw new KithError('usage', `kith permit takes REQUEST and OPTION\n\n${permitHelp}`)
  const daemon = await connectDaemon()
  if (daemon === undefined)
    throw new KithError('io', 'kith permit needs the node running: start kith up')
  try {
    const option = /^\d+$/.test(positionals[1]!) ? Number(positionals[1]) : positionals[1]!
    const r = await daemon.request<{
      event: { id: string }
      request: string
      option: { name: string }
    }>('decide', { request: positionals[0]!, option })
    out.line(
      `answered request ${r.request.slice(0, 8)} with ${r.option.name}: sent ${r.event.id.slice(0, 12)}…`,
    )
    return 0
  } finally {
    daemon.close()
  }
}
