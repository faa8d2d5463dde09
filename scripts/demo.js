// npm run demo: the whole story so far on one machine, with embedded defaults.
// Two nodes ("laptop" and "devbox"), each with its own KITH_HOME in a temp dir: the laptop's
// `kith up` embeds a hub; `kith pair` / `kith join` enroll the devbox (the 6 digits are confirmed
// on both sides automatically here, and the demo says so); the devbox hosts the test ACP agent
// and its `kith up` links to the hub; the laptop prompts the agent, gets its reply, approves a
// permission the agent asks for; then a look at kith status, and a clean shutdown.
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { kithBin } from './hub-process.js'

const fakeAgent = fileURLToPath(new URL('../test/fixtures/fake-agent.mjs', import.meta.url))

const root = mkdtempSync(join(tmpdir(), 'kith-demo-'))
const homes = { laptop: join(root, 'laptop'), devbox: join(root, 'devbox') }
const say = (s) => process.stdout.write(`${s}\n`)
const step = (s) => say(`\n▸ ${s}`)
const children = new Set()

/** Runs `kith ARGS` as MACHINE; resolves with its output (rejects on a non-zero exit). */
function kith(machine, args, { onOutput, input, codes = [0] } = {}) {
  const child = spawn(kithBin, args, { env: { ...process.env, KITH_HOME: homes[machine] } })
  children.add(child)
  let out = ''
  const onData = (d) => {
    out += d
    onOutput?.(out, child)
  }
  child.stdout.on('data', onData)
  child.stderr.on('data', onData)
  if (input !== undefined) child.stdin.end(input)
  const done = new Promise((resolve, reject) =>
    child.on('exit', (code) => {
      children.delete(child)
      if (codes.includes(code)) resolve(out)
      else reject(new Error(`kith ${args.join(' ')} (${machine}) exited ${code}:\n${out}`))
    }),
  )
  return { child, done, output: () => out }
}

function waitFor(proc, pattern) {
  return new Promise((resolve, reject) => {
    const check = () => {
      const m = proc.output().match(pattern)
      if (m) resolve(m)
    }
    proc.child.stdout.on('data', check)
    proc.child.stderr.on('data', check)
    proc.done.then(() => check(), reject)
    check()
  })
}

const indent = (text) => text.trimEnd().replace(/^/gm, '    ')

async function main() {
  step(`kith init on the laptop (KITH_HOME=${homes.laptop})`)
  say(indent(await kith('laptop', ['init', '--name', 'laptop']).done))

  step('kith up on the laptop: no hub configured, so it embeds one on 127.0.0.1')
  const laptopUp = kith('laptop', ['up', '--port', process.env.KITH_DEMO_PORT ?? '0'])
  say(indent((await waitFor(laptopUp, /kith up: linked to .*/))[0]))

  step('kith pair on the laptop, kith join on the devbox (a machine with no keys yet)')
  const pair = kith('laptop', ['pair', '--name', 'devbox'])
  const code = (await waitFor(pair, /kith join (kith-pair1:[A-Za-z0-9_-]+)/))[1]
  say(`    code: ${code.slice(0, 36)}… (also shown as a QR)`)
  const join = kith('devbox', ['join', code, '--yes', '--name', 'devbox'])
  const sasI = (await waitFor(pair, /do not type it anywhere:\s+(\d{3} \d{3})/))[1]
  const sasR = (await waitFor(join, /do not type it anywhere:\s+(\d{3} \d{3})/))[1]
  say(`    laptop shows ${sasI}, devbox shows ${sasR}`)
  say('    (demo: confirming the 6 digits on both sides automatically; a person compares them)')
  join.child.stdin.write('y\n')
  pair.child.stdin.write('y\n')
  say(indent((await pair.done).match(/paired: .*/)?.[0] ?? ''))
  say(indent((await join.done).match(/joined .*/)?.[0] ?? ''))

  step(
    'kith agent add on the devbox: the test ACP agent (any ACP command works: claude-agent-acp, …)',
  )
  say(
    indent(
      await kith('devbox', ['agent', 'add', 'claude', '--', process.execPath, fakeAgent]).done,
    ),
  )

  step('kith up on the devbox')
  const devboxUp = kith('devbox', ['up'])
  say(indent((await waitFor(devboxUp, /kith up: linked to .*/))[0]))

  step('a message each way')
  say(indent(await kith('laptop', ['send', '#ops', 'hello @devbox, welcome to the fleet']).done))
  say(indent(await kith('devbox', ['send', '#ops', 'thanks, I am up']).done))
  for (let i = 0; i < 100; i++) {
    const log = await kith('laptop', ['log', '#ops']).done
    if (log.includes('thanks, I am up')) {
      say('    kith log #ops on the laptop:')
      say(indent(indent(log)))
      break
    }
    await new Promise((r) => setTimeout(r, 100))
  }

  step("the laptop prompts the devbox's agent")
  const untilLog = async (pattern) => {
    for (let i = 0; i < 200; i++) {
      const log = await kith('laptop', ['log', '#ops', '--json']).done
      const hit = log
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
        .find((m) => pattern(m))
      if (hit) return hit
      await new Promise((r) => setTimeout(r, 100))
    }
    throw new Error('the agent did not answer')
  }
  say(indent(await kith('laptop', ['send', '#ops', '@claude echo hello from the laptop']).done))
  const reply = await untilLog(
    (m) => m.from.name === 'claude' && m.content === 'hello from the laptop',
  )
  say(`    claude [agent] replied: ${reply.content}`)

  step('live progress: kith watch on the laptop while the agent works')
  const watch = kith('laptop', ['watch', 'claude'])
  await waitFor(watch, /watching @claude/)
  say(indent(await kith('laptop', ['send', '#ops', '@claude work']).done))
  await waitFor(watch, /claude #ops: done/)
  say(indent(watch.output()))
  watch.child.kill('SIGTERM')
  const worked = await untilLog((m) => m.from.name === 'claude' && m.content === 'done')
  say(`    claude [agent] replied: ${worked.content}`)

  step('a tool call that needs permission, approved from the laptop')
  say(indent(await kith('laptop', ['send', '#ops', '@claude permission rm -rf build']).done))
  const card = await untilLog(
    (m) => m.from.name === 'claude' && m.content.includes('"title":"rm -rf build"'),
  )
  const options = JSON.parse(card.content)
    .options.map((o, i) => `[${i + 1}] ${o.name}`)
    .join('  ')
  say(`    🔐 claude asks to run: rm -rf build   ${options}   (request ${card.id.slice(0, 8)})`)
  say('    (demo: answering 1 from the laptop; in kith chat a person types /allow 1)')
  say(indent(await kith('laptop', ['permit', card.id, '1']).done))
  const done = await untilLog(
    (m) => m.from.name === 'claude' && m.content.startsWith('permission:'),
  )
  say(`    claude [agent] replied: ${done.content}`)

  step('kith audit on the laptop: who prompted, who approved, under which policy (checked offline)')
  const audited = kith('laptop', ['audit'], { codes: [0, 1] })
  say(indent(await audited.done))
  if (audited.child.exitCode !== 1)
    throw new Error('kith audit did not flag the unasked "run tests"')
  say(
    '    (exit 1: the test agent ran "run tests" without asking while its policy says ask, so the',
  )
  say('    audit flags it; the card the laptop allowed checks out)')

  step('kith device list and kith status on the laptop')
  say(indent(await kith('laptop', ['device', 'list']).done))
  say(indent(await kith('laptop', ['status']).done))
  say(indent(await kith('devbox', ['status']).done))

  step('shutting down')
  devboxUp.child.kill('SIGTERM')
  laptopUp.child.kill('SIGTERM')
  await Promise.allSettled([devboxUp.done, laptopUp.done])
  say('    both nodes stopped cleanly.')

  step("what the laptop's hub stored: the fleet is sealed from its first message (kith-e2e/1)")
  const hubFiles = ['hub.db', 'hub.db-wal'].map((f) => `${homes.laptop}/${f}`).filter(existsSync)
  const bytes = Buffer.concat(hubFiles.map((f) => readFileSync(f)))
  for (const text of ['rm -rf build', 'permission: selected allow']) {
    const found = bytes.includes(text)
    say(`    "${text}" in the hub's files: ${found ? 'FOUND' : 'not there (ciphertext only)'}`)
    if (found) throw new Error(`the hub stored "${text}" in the clear`)
  }
  say('\nTry it by hand: see "Everyday commands" and "Pairing two real machines" in README.md.')
}

main()
  .catch((err) => {
    process.exitCode = 1
    process.stderr.write(`demo failed: ${err instanceof Error ? err.message : String(err)}\n`)
  })
  .finally(() => {
    for (const c of children) c.kill('SIGKILL')
    rmSync(root, { recursive: true, force: true })
  })
