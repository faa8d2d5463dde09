// The setting every real-agent test runs in: a real hub, a "laptop" node and a "devbox" node
// (real `kith` processes, one owner), and one real ACP agent hosted by the devbox, spawned with
// a HOME of its own. The agents come from test/agents/pinned (npm run test:agents installs them).
import { existsSync, mkdirSync, readFileSync, readdirSync, readlinkSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect, onTestFinished } from 'vitest'
import * as nip19 from 'nostr-tools/nip19'
import { verifyEventSignature } from '../../src/events/event.js'
import type { ChatItem } from '../../src/node/chat-store.js'
import { laptopAndDevbox, runKith, startNodeProcess, type NodeProcess } from '../helpers/cli.js'
import { history } from '../helpers/node-chat.js'
import { tempDir } from '../helpers/tmp.js'
import type { MockModel, ModelReply, ModelRequest } from './mock-model.js'

/** Where `npm run test:agents` installs the pinned agents (apart from the main dependencies). */
export const pinned = fileURLToPath(new URL('./pinned/node_modules/', import.meta.url))

/** A file of an installed pinned package; a clear failure (never a skip) when it is missing. */
export function pinnedFile(...parts: string[]): string {
  const path = join(pinned, ...parts)
  if (!existsSync(path)) {
    throw new Error(
      `${path} is missing: install the pinned agents first (npm run test:agents does: ` +
        `npm install --prefix test/agents/pinned --no-save)`,
    )
  }
  return path
}

export interface Fleet {
  dir: string
  laptop: string
  devbox: string
  /** The agent's HOME (empty at first, apart from what the test writes there). */
  agentHome: string
  /** The agent's working directory (its sessions' cwd). */
  agentCwd: string
  agentPubkey: string
  devboxNode: NodeProcess
  laptopNode: NodeProcess
  /** `kith send '#ops' TEXT` from the laptop (in `reply`'s thread); the prompt's event id. */
  ask: (text: string, reply?: string) => Promise<string>
  /** The laptop's view of #ops. */
  history: () => Promise<ChatItem[]>
  /** The first event of `kind` threaded under `question` on the laptop, once it has arrived. */
  threaded: (question: string, kind?: number, timeoutMs?: number) => Promise<ChatItem>
  /** Stops the devbox node (SIGTERM: it stops its agents) and starts it again. */
  restartDevbox: () => Promise<void>
  /** Stops both nodes as a person would (SIGTERM); the devbox stops its agent first. */
  stop: () => Promise<void>
}

/**
 * Processes whose working directory is `dir` or below it (Linux /proc): the agent and anything
 * it started there. codex-acp 0.16.0 does not exit when its stdin closes, so an agent left
 * behind by a node that did not stop it would live on.
 */
export function processesIn(dir: string): number[] {
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const cwd = readlinkSync(`/proc/${entry}/cwd`)
      if (cwd === dir || cwd.startsWith(`${dir}/`)) pids.push(Number(entry))
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return pids
}

/**
 * Sets up the fleet with one agent NAME on the devbox: `kith agent add NAME --cwd CWD --
 * COMMAND…`. `prepare` writes the agent's own config into its HOME and cwd before anything
 * starts. `env` goes into the devbox node's environment and through to the agent (`kith agent
 * add … --env NAME,…`).
 */
export async function startFleet(opts: {
  name: string
  command: string[]
  prepare?: (paths: { agentHome: string; agentCwd: string }) => void
  env?: Record<string, string>
  /** More `kith up` flags for the laptop (e.g. `--acp-port 0` for the ACP remote transport). */
  laptopArgs?: string[]
}): Promise<Fleet> {
  const dir = tempDir('kith-agents-')
  // A plain fleet: the tests check each card's and reply's own signature, as any Nostr client
  // reading the fleet would (a sealed fleet's events are checked in the e2e tier).
  const { laptop, devbox } = await laptopAndDevbox(dir, { plain: true })
  const agentHome = join(dir, `${opts.name}-home`)
  const agentCwd = join(dir, `${opts.name}-work`)
  mkdirSync(agentHome)
  mkdirSync(agentCwd)
  opts.prepare?.({ agentHome, agentCwd })
  const passed = Object.keys(opts.env ?? {})
  const added = await runKith(
    [
      'agent',
      'add',
      opts.name,
      '--cwd',
      agentCwd,
      ...(passed.length > 0 ? ['--env', passed.join(',')] : []),
      '--json',
      '--',
      ...opts.command,
    ],
    { home: devbox },
  )
  expect(added.code, added.stderr).toBe(0)
  const decoded = nip19.decode((JSON.parse(added.stdout) as { agent: string }).agent)
  expect(decoded.type).toBe('npub')
  const agentPubkey = decoded.data as string

  // The devbox node's HOME is the agent's: the agent inherits HOME (and PATH, LANG, …) from the
  // node through the env allowlist, and nothing else but the names `env` lists.
  const startDevbox = async () => {
    const node = await startNodeProcess(devbox, [], { ...opts.env, HOME: agentHome })
    await node.waitFor(/linked to/)
    return node
  }
  const fleet: Fleet = {
    dir,
    laptop,
    devbox,
    agentHome,
    agentCwd,
    agentPubkey,
    devboxNode: await startDevbox(),
    laptopNode: await startNodeProcess(laptop, opts.laptopArgs),
    ask: async (text, reply) => {
      const r = await runKith(
        ['send', '#ops', text, '--json', ...(reply === undefined ? [] : ['--reply', reply])],
        { home: laptop },
      )
      expect(r.code, r.stderr).toBe(0)
      return (JSON.parse(r.stdout) as { id: string }).id
    },
    history: () => history(laptop),
    threaded: async (question, kind = 9, timeoutMs = 90_000) => {
      let found: ChatItem | undefined
      await expect
        .poll(
          async () => {
            found = (await history(laptop)).find(
              (i) =>
                i.event.kind === kind &&
                i.event.tags.some((t) => t[0] === 'e' && t[1] === question),
            )
            return found !== undefined
          },
          { timeout: timeoutMs, interval: 200 },
        )
        .toBe(true)
      return found!
    },
    restartDevbox: async () => {
      await fleet.devboxNode.stop()
      fleet.devboxNode = await startDevbox()
    },
    stop: async () => {
      await fleet.devboxNode.stop()
      await fleet.laptopNode.stop()
    },
  }
  onTestFinished(async () => {
    await fleet.stop()
    // Whatever a failed test left running in its directories is ended (by pid, ours only).
    for (const pid of processesIn(dir)) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // Already gone.
      }
    }
  })
  await fleet.laptopNode.waitFor(/linked to/)
  return fleet
}

/** `kith status --json` of a node, as parsed JSON. */
export async function status(home: string): Promise<{
  agents: { name: string; state: string; adapter: { name?: string; version?: string } }[]
}> {
  const r = await runKith(['status', '--json'], { home })
  expect(r.code, r.stderr).toBe(0)
  return JSON.parse(r.stdout) as Awaited<ReturnType<typeof status>>
}

/** The shell command the tool-call tests have the model run: it leaves a proof in the agent's cwd. */
export const proofCommand = 'echo kith-tool-ran > proof.txt && cat proof.txt'

/**
 * The model's side of a tool-call turn: a call of the agent's shell tool `tool` with
 * `proofCommand`, then, once the tool's result has come back, what it printed.
 */
export function proofTurn(tool: string, req: ModelRequest): ModelReply {
  const result = req.toolResults.at(-1)
  return result === undefined
    ? {
        toolCall: {
          name: tool,
          arguments: { command: proofCommand, description: 'Write the proof file' },
        },
      }
    : { text: `The tool said: ${result.output.trim()}` }
}

/**
 * The `proofTurn` prompted by `question`, approved from the laptop. The card (kind 4142) arrives
 * signed by the agent, for `proofCommand`, with the options in `optionKinds` order, while the
 * command has not run and no tool result has gone to the model; the laptop answers with the
 * number of the allow-once option (`kith permit CARD N`), the decision (4143) follows, then the
 * reply with the tool's output, signed by the agent; the proof file is there and its output went
 * back to the model, once. Returns the model's request that carried the tool result.
 */
export async function approveProofCall(
  fleet: Fleet,
  model: MockModel,
  question: string,
  optionKinds: string[],
): Promise<ModelRequest> {
  const proof = join(fleet.agentCwd, 'proof.txt')
  const card = await fleet.threaded(question, 4142)
  expect(card.event.pubkey).toBe(fleet.agentPubkey)
  expect(verifyEventSignature(card.event)).toBe(true)
  const ask = JSON.parse(card.event.content) as {
    title: string
    toolKind: string
    options: { optionId: string; name: string; kind: string }[]
  }
  expect(ask.title).toBe(proofCommand)
  expect(ask.toolKind).toBe('execute')
  expect(ask.options.map((o) => o.kind)).toEqual(optionKinds)
  expect(existsSync(proof)).toBe(false)
  expect(model.requests.some((r) => r.toolResults.length > 0)).toBe(false)

  // Agents order their options differently (claude lists "Always Allow" first): the person picks
  // allow once by its number on the card.
  const once = ask.options.findIndex((o) => o.kind === 'allow_once')
  const permit = await runKith(['permit', card.event.id.slice(0, 12), String(once + 1)], {
    home: fleet.laptop,
  })
  expect(permit.code, permit.stderr).toBe(0)
  const decision = await fleet.threaded(card.event.id, 4143)
  expect(JSON.parse(decision.event.content)).toEqual({ optionId: ask.options[once]!.optionId })

  const reply = await fleet.threaded(question, 9)
  expect(reply.event.content).toBe('The tool said: kith-tool-ran')
  expect(reply.event.pubkey).toBe(fleet.agentPubkey)
  expect(verifyEventSignature(reply.event)).toBe(true)
  // The tool really ran, in the agent's cwd, and its output went back to the model.
  expect(readFileSync(proof, 'utf8')).toBe('kith-tool-ran\n')
  const withResult = model.requests.filter((r) => r.toolResults.length > 0)
  expect(withResult.map((r) => r.toolResults.map((t) => t.output.trim()))).toEqual([
    ['kith-tool-ran'],
  ])
  return withResult[0]!
}
