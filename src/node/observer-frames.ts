import { channelOf } from '../events/chat.js'
import { signEvent, type NostrEvent } from '../events/event.js'
import { makeObserverFrame, openObserverFrame, sealFrameBody } from '../events/observer-frame.js'
import type { ControlClientHandle } from './control.js'
import { resolveAgent, type Who } from '../grants/names.js'
import { retiredReason } from './agent-signer.js'
import type { AgentKey, NodeContext } from './node-context.js'
import { observerFrameMs } from './timings.js'

/** A coalesced slice of an agent turn's session/update stream. */
export interface WatchFrame {
  agent: Who
  channel: string
  prompt: string
  updates: unknown[]
}

/** The live view of hosted agents' turns: frames sent out, frames received, local watchers. */
export class ObserverFrames {
  private readonly frames = new Map<string, { updates: unknown[]; timer: NodeJS.Timeout }>()
  private readonly watchers = new Set<(frame: WatchFrame) => void>()

  constructor(
    private readonly node: NodeContext,
    private readonly personOf: (pubkey: string) => string | undefined,
    /** The person the hosted agents belong to: this node's owner (see AgentBridge.hostPerson). */
    private readonly hostPerson: () => string | undefined,
  ) {}

  /**
   * Observer frames (kind 24142): a turn's session/update stream, coalesced (every 100 ms or 50
   * updates), NIP-44 encrypted by the agent to each recipient — the prompter, and the devices of
   * the agent's owner (at most 10) — and sent live, never stored. Watchers on this node get them
   * directly.
   */
  observe(agent: AgentKey, question: NostrEvent, update: unknown): void {
    let buf = this.frames.get(question.id)
    if (buf === undefined) {
      buf = {
        updates: [],
        timer: setTimeout(() => this.flushFrame(agent, question), observerFrameMs),
      }
      this.frames.set(question.id, buf)
    }
    buf.updates.push(update)
    if (buf.updates.length >= 50) this.flushFrame(agent, question)
  }

  /** Sends the turn's buffered updates now (before its reply, or as it starts). */
  flush(agent: AgentKey, question: NostrEvent): void {
    this.flushFrame(agent, question)
  }

  private flushFrame(agent: AgentKey, question: NostrEvent): void {
    const buf = this.frames.get(question.id)
    if (buf === undefined) return
    clearTimeout(buf.timer)
    this.frames.delete(question.id)
    // A frame timer firing during shutdown has a closed store: frames are best effort.
    if (this.node.stopped()) return
    const channel = channelOf(question) ?? 'general'
    const frame: WatchFrame = {
      agent: this.node.names.who(agent.record.pubkey),
      channel,
      prompt: question.id,
      updates: buf.updates,
    }
    for (const fn of this.watchers) fn(frame)
    // A retired agent's key signs and encrypts nothing more (it may already be wiped).
    if (retiredReason(agent) !== undefined) return
    const owner = this.hostPerson()
    const devices = this.node.book.verifier
      .allGrants()
      .filter(
        (g) =>
          g.role === 'device' &&
          owner !== undefined &&
          this.personOf(g.subject) === owner &&
          g.subject !== this.node.id.devicePubkey,
      )
      .map((g) => g.subject)
    // The owner key itself too: a person may watch from any Nostr client holding it.
    const recipients = [
      ...new Set([question.pubkey, ...(owner === undefined ? [] : [owner]), ...devices]),
    ]
      .filter((r) => r !== this.node.id.devicePubkey)
      .slice(0, 10)
    const body = { prompt: question.id, updates: buf.updates }
    const sealed = this.node.seals?.() === true
    for (const r of recipients) {
      const event = signEvent(
        makeObserverFrame(
          {
            recipient: r,
            channel,
            prompt: question.id,
            content: sealFrameBody(body, agent.secret, r),
          },
          this.node.now(),
          sealed,
        ),
        agent.secret,
      )
      for (const link of this.node.links) {
        // Frames are live and best effort (never stored or queued): a lost one is not resent.
        if (link.authenticated)
          link.publish(event).then(
            (a) => {
              if (!a.ok) this.node.log(`frame refused by ${link.url}: ${a.message}`)
            },
            () => undefined,
          )
      }
    }
  }

  /** An observer frame addressed to this device: decrypted and shown to local watchers. */
  receiveFrame(event: NostrEvent): void {
    if (!event.tags.some((t) => t[0] === 'p' && t[1] === this.node.id.devicePubkey)) return
    const body = openObserverFrame(event, this.node.id.deviceSecret)
    if (body === undefined) {
      this.node.log(`dropped an observer frame that does not decrypt or read`)
      return
    }
    const frame: WatchFrame = {
      agent: this.node.names.who(event.pubkey),
      channel: channelOf(event) ?? 'general',
      prompt: body.prompt,
      updates: body.updates,
    }
    for (const fn of this.watchers) fn(frame)
  }

  /** `kith watch` on this node: every frame from now on, of all agents or the one named. */
  watch(params: Record<string, unknown>, client: ControlClientHandle): { ok: true } {
    // A name resolves as a mention does (own person first; person/name where it is ambiguous).
    let agent: string | undefined
    if (typeof params.agent === 'string') {
      agent = resolveAgent(this.node.names, params.agent, this.node.id.devicePubkey)
    }
    const fn = (frame: WatchFrame) => {
      if (agent === undefined || frame.agent.pubkey === agent) client.notify('frame', frame)
    }
    this.watchers.add(fn)
    client.onClose(() => this.watchers.delete(fn))
    return { ok: true }
  }
}
