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
  about: `Prints the URL of the web app that the running node (kith up) serves on 127.0.0.1, then
opens it in the default browser (xdg-open, or open on macOS). Where that fails or there is no
such command (a headless machine, an SSH session), the URL above is the way in: it exits 0 all
the same. The first time,
the page makes its own device key and asks for a pairing code: run kith pair --name NAME here
and paste the code (or scan the QR) there.`,
})

/** The program that opens a URL in the default browser here, if any. */
function opener(): string | undefined {
  if (process.platform === 'darwin') return 'open'
  if (process.platform === 'win32') return undefined
  return 'xdg-open'
}

/**
 * How long to wait for the opener to say whether it worked. Some fall back to a terminal browser
 * or wait for the one they started, so a silent one is taken as done and left running.
 */
const OPENER_WAIT_MS = 5_000

/** Runs `command url` detached; resolves false when the command does not exist or fails. */
function launch(command: string, url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn(command, [url], { stdio: 'ignore', detached: true })
    // The child stays referenced until it answers: an unreferenced one let the process end with
    // this promise unsettled (exit 13, nothing printed) where xdg-open fails.
    const timer = setTimeout(() => settle(true), OPENER_WAIT_MS)
    const settle = (ok: boolean) => {
      clearTimeout(timer)
      child.unref()
      resolve(ok)
    }
    child.once('error', () => settle(false))
    child.once('exit', (code) => settle(code === 0))
  })
}

export async function runOpen(argv: string[], out: Out): Promise<number> {
  const parsed = openCommand.parse(argv, out)
  if (typeof parsed === 'number') return parsed
  const { values } = parsed
  const daemon = await requireNode('the web app is served by the running node: start kith up first')
  let web: string | null
  try {
    web = (await daemon.request('status')).web
  } finally {
    daemon.close()
  }
  if (web === null)
    throw new KithError(
      'not-found',
      'the running node does not serve the web app (started with --no-web, or its port was taken: see its log)',
    )
  // The URL first, whatever happens next: on a headless machine it is the only way in.
  out.line(web)
  const command = values.print ? undefined : opener()
  if (command !== undefined && !(await launch(command, web)))
    out.err(`kith open: ${command} could not open a browser here; open the URL above`)
  return 0
}

/** What the command index loads. */
export { openCommand as command, runOpen as run }
