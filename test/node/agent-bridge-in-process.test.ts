import { join } from 'node:path'
import { generateSecretKey } from 'nostr-tools/pure'
import { describe, expect, it, onTestFinished } from 'vitest'
import { AgentHost } from '../../src/acp/host.js'
import { makeChatMessage, outcomeOf } from '../../src/events/chat.js'
import { publicKeyOf, signEvent, type NostrEvent } from '../../src/events/event.js'
import { Kind } from '../../src/events/kinds.js'
import { signGrant } from '../../src/grants/grant.js'
import { Names } from '../../src/grants/names.js'
import type { AgentRecord } from '../../src/identity/agents.js'
import { initIdentity, loadIdentity } from '../../src/identity/keys.js'
import { AgentBridge } from '../../src/node/agent-bridge.js'
import { GrantBook } from '../../src/node/grant-book.js'
import type { NodeContext } from '../../src/node/node-context.js'
import { NodeStore } from '../../src/store/node-store.js'
import { inProcessAgent, type InProcessAgent } from '../helpers/in-process-agent.js'
import { tempDir } from '../helpers/tmp.js'

// The agent bridge in-process: a minimal NodeContext (node/node-context.ts, the bridge's seam)
// over real parts (a KITH_HOME, node.db, the grant book), no hub and no `kith` process, hosting
// one agent whose host reaches an in-process ACP agent over in-memory streams. What the bridge
// publishes is what the node's outbox gets.

const now = () => Math.floor(Date.now() / 1000)

interface Rig {
  bridge: AgentBridge
  agent: InProcessAgent
  agentPubkey: string
  fleet: string
  /** A chat message from this node's device (its owner's), mentioning the agent. */
  prompt(text: string): NostrEvent
  /** The first event the bridge publishes (now or later) that matches. */
  published(match: (e: NostrEvent) => boolean): Promise<NostrEvent>
}

function rig(): Rig {
  const ownerSk = generateSecretKey()
  const fleet = publicKeyOf(ownerSk)
  const home = join(tempDir(), 'devbox')
  initIdentity({ home, name: 'devbox', ownerSecret: ownerSk })
  const id = loadIdentity(home)
  const store = new NodeStore(home)
  const book = new GrantBook(store.events, fleet)
  const agentSk = generateSecretKey()
  const agentPubkey = publicKeyOf(agentSk)
  const agentGrant = signGrant(
    { subject: agentPubkey, role: 'agent', fleet, name: 'helper' },
    ownerSk,
    agentSk,
    now(),
  )
  expect(
    book.learn([
      signGrant(
        { subject: id.devicePubkey, role: 'device', fleet, name: 'devbox' },
        ownerSk,
        id.deviceSecret,
        now(),
      ),
      agentGrant,
    ]),
  ).toBe(2)
  const sent: NostrEvent[] = []
  const waiting: { match: (e: NostrEvent) => boolean; resolve: (e: NostrEvent) => void }[] = []
  let stopped = false
  const node: NodeContext = {
    id,
    store,
    book,
    names: new Names(book.verifier, store.reads, id.devicePubkey),
    links: [],
    log: () => undefined,
    now,
    stopped: () => stopped,
    enqueue: (e) => {
      store.enqueue(e, now())
      sent.push(e)
      for (const w of waiting.filter((w) => w.match(e))) {
        waiting.splice(waiting.indexOf(w), 1)
        w.resolve(e)
      }
    },
    emit: () => undefined,
    pump: () => undefined,
    agentStatesChanged: () => undefined,
    agentReport: () => undefined,
  }
  const bridge = new AgentBridge(node, {})
  const agent = inProcessAgent()
  const record: AgentRecord = {
    name: 'helper',
    pubkey: agentPubkey,
    grant: agentGrant.id,
    createdAt: now(),
    command: ['in-process'],
    cwd: home,
  }
  const host = new AgentHost(
    'helper',
    { argv: ['in-process'], cwd: home, logPath: join(home, 'helper.log') },
    node.log,
    { transport: agent.transport },
  )
  // Hosted as loadAgents hosts one, but over the in-process agent (agent-loader.ts spawns).
  bridge.agents.set(agentPubkey, { record, host, secret: agentSk })
  onTestFinished(async () => {
    await bridge.stop()
    stopped = true
    store.close()
  })
  return {
    bridge,
    agent,
    agentPubkey,
    fleet,
    prompt: (text) => {
      const event = signEvent(
        makeChatMessage(
          { channel: 'ops', fleet, text: `@helper ${text}`, mentions: [agentPubkey] },
          now(),
        ),
        id.deviceSecret,
      )
      store.events.insertBatch([event])
      return event
    },
    published: (match) => {
      const seen = sent.find(match)
      return seen !== undefined
        ? Promise.resolve(seen)
        : new Promise((resolve) => waiting.push({ match, resolve }))
    },
  }
}

/** A chat message by the agent threaded under `prompt` (its reply, or a notice). */
const replyTo = (r: Rig, prompt: NostrEvent) => (e: NostrEvent) =>
  e.kind === Kind.ChatMessage &&
  e.pubkey === r.agentPubkey &&
  e.tags.some((t) => t[0] === 'e' && t[1] === prompt.id)

describe('AgentBridge in-process (a fake NodeContext, the host over in-memory streams)', () => {
  it('a mention is routed to a session of the agent and its reply is published, threaded', async () => {
    const r = rig()
    const prompt = r.prompt('echo hello there')
    r.bridge.dispatch(prompt)
    const reply = await r.published(replyTo(r, prompt))
    expect(reply.content).toBe('hello there')
    expect(reply.tags).toContainEqual(['h', 'ops'])
    expect(reply.tags).toContainEqual(['fleet', r.fleet])
    expect(outcomeOf(reply)).toBeUndefined()
  })

  it("a tool call becomes a card, and this device's answer goes back to the agent", async () => {
    const r = rig()
    const prompt = r.prompt('permission npm test')
    r.bridge.dispatch(prompt)
    const card = await r.published(
      (e) => e.kind === Kind.PermissionRequest && e.pubkey === r.agentPubkey,
    )
    expect(r.bridge.permissions.openCards({ channel: 'ops' }).map((c) => c.id)).toEqual([card.id])
    const answered = r.bridge.permissions.decide({ request: card.id.slice(0, 8), option: 'allow' })
    expect(answered.option.optionId).toBe('allow')
    const reply = await r.published(replyTo(r, prompt))
    expect(reply.content).toBe('outcome: allow')
    // Decided: no longer open to this person.
    expect(r.bridge.permissions.openCards({ channel: 'ops' })).toEqual([])
  })

  it("kith cancel stops the turn it names, and the turn's end is published as cancelled", async () => {
    const r = rig()
    const prompt = r.prompt('hang')
    r.bridge.dispatch(prompt)
    const sessionId = await r.agent.hanging()
    const sent = r.bridge.cancelTurn({ channel: 'ops', agent: 'helper' })
    expect(sent.prompts).toBe(1)
    expect(sent.event.kind).toBe(Kind.AgentControl)
    expect(sent.event.tags).toContainEqual(['e', prompt.id])
    const reply = await r.published(replyTo(r, prompt))
    expect(outcomeOf(reply)).toEqual({ kind: 'cancelled', code: 'cancelled' })
    expect(reply.content).toMatch(/^⏹ helper: turn cancelled/)
    expect(r.agent.cancelled).toEqual([sessionId])
  })
})
