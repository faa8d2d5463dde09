import { KithError } from '../errors.js'

/** Output helpers: humans get lines, scripts get one JSON document (`--json`). */
export interface Out {
  line(text?: string): void
  json(value: unknown): void
  err(text: string): void
  /** A secret the person gives (`kith init --owner-key-stdin`): stdin, never echoed. */
  secret(prompt: string): Promise<string>
}

export const stdio: Out = {
  line: (text = '') => process.stdout.write(`${text}\n`),
  json: (value) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
  secret: (prompt) => readSecretFromStdin(prompt),
}

/**
 * `kith log --json | head`: once the reader has gone, nothing more can be said, so the command
 * ends quietly (exit 0) instead of dying with an EPIPE stack trace.
 */
export function endQuietlyWhenStdoutCloses(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0)
    throw err
  })
}

/**
 * Reads a secret from stdin. On a terminal, echo is off while typing so it never shows on the
 * screen or in scrollback; from a pipe, the whole input is read.
 */
async function readSecretFromStdin(prompt: string): Promise<string> {
  const stdin = process.stdin
  if (!stdin.isTTY) {
    const chunks: Buffer[] = []
    for await (const chunk of stdin) chunks.push(chunk as Buffer)
    const text = Buffer.concat(chunks).toString('utf8').trim()
    if (text === '') throw new KithError('usage', 'expected the owner secret on stdin, got nothing')
    return text
  }
  process.stderr.write(prompt)
  stdin.setRawMode(true)
  stdin.resume()
  return new Promise((resolve, reject) => {
    let value = ''
    const done = (err?: Error) => {
      stdin.setRawMode(false)
      stdin.pause()
      stdin.off('data', onData)
      process.stderr.write('\n')
      if (err) reject(err)
      else resolve(value)
    }
    const onData = (buf: Buffer) => {
      for (const ch of buf.toString('utf8')) {
        if (ch === '\r' || ch === '\n') return done()
        if (ch === '\u0003') return done(new KithError('usage', 'cancelled'))
        if (ch === '\u007f') value = value.slice(0, -1)
        else value += ch
      }
    }
    stdin.on('data', onData)
  })
}
