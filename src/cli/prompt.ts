import { createInterface, type Interface } from 'node:readline'

let rl: Interface | undefined
const lines: string[] = []
const waiting: ((line: string | undefined) => void)[] = []
let ended = false

function reader(): void {
  if (rl) return
  rl = createInterface({ input: process.stdin, terminal: false })
  rl.on('line', (line) => {
    const w = waiting.shift()
    if (w) w(line)
    else lines.push(line)
  })
  rl.on('close', () => {
    ended = true
    for (const w of waiting.splice(0)) w(undefined)
  })
}

/** The next line of stdin (shared by every question of one command), or undefined at EOF. */
export function readLine(): Promise<string | undefined> {
  reader()
  const line = lines.shift()
  if (line !== undefined) return Promise.resolve(line)
  if (ended) return Promise.resolve(undefined)
  return new Promise((resolve) => waiting.push(resolve))
}

/** Drops lines typed before now: an answer typed ahead is not an answer to what is shown next. */
export function discardTypedAhead(): void {
  lines.length = 0
}

/** Asks a yes/no question on stderr; only "y" or "yes" is a yes (EOF is a no). */
export async function askYesNo(question: string): Promise<boolean> {
  process.stderr.write(`${question} [y/N] `)
  const answer = await readLine()
  if (answer === undefined) process.stderr.write('\n')
  return /^\s*y(es)?\s*$/i.test(answer ?? '')
}

export function closePrompt(): void {
  rl?.close()
  rl = undefined
}
