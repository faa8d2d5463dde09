import { spawn } from 'node:child_process'
import { KithError } from '../../errors.js'
import { declare } from '../declare.js'
import type { Out } from '../io.js'
import { requireNode } from '../control-client.js'

export const openCommand = declare({
  name: 'open',
  summary: 'open the web app the running node serves (a browser paired as a device)',
  usage: ['kith open [--print]'],
  arity: { min: 0, max: 0, error: 'kith open takes no arguments' },
  options: { print: { type: 'boolean', description: 'only print the URL' } },
  about: `Opens the web app that the running node (kith up) serves on 127.0.0.1, in the default browser
(xdg-open, or open on macOS); prints the URL when there is no such command. The first time,
the page makes its own device key and asks for a pairing code: run kith pair --name NAME here
and paste the code (or scan the QR) there.`,
})

/** The program that opens a URL in the default browser here, if any. */
function opener(): string | undefined {
  if (process.platform === 'darwin') return 'open'
  if (process.platform === 'win32') return undefined
  return 'xdg-open'
}

/** Runs `command url` detached; resolves false when the command does not exist or fails. */
function launch(command: string, url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn(command, [url], { stdio: 'ignore', detached: true })
    child.once('error', () => resolve(false))
    child.once('exit', (code) => resolve(code === 0))
    child.unref()
  })
}

export async function runOpen(argv: string[], out: Out): Promise<number> {
  const parsed = openCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values } = parsed
  const daemon = await requireNode('the web app is served by the running node: start kith up first')
  let web: string | null
  try {
    web = (await daemon.request<{ web: string | null }>('status')).web
  } finally {
    daemon.close()
  }
  if (web === null)
    throw new KithError(
      'not-found',
      'the running node does not serve the web app (started with --no-web, or its port was taken: see its log)',
    )
  const command = values.print ? undefined : opener()
  if (command !== undefined && (await launch(command, web))) {
    out.line(`opened ${web}`)
    return 0
  }
  out.line(web)
  if (command !== undefined) out.err(`kith open: could not run ${command}; open the URL above`)
  return 0
}

/** What the command index loads. */
export { openCommand as command, runOpen as run }
