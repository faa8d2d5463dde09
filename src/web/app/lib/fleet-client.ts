import { signal } from '@preact/signals'
import {
  channelOf,
  definitionsFirst,
  followKinds,
  judgeHubRevoked,
  KithError,
  makeAgentCancel,
  makeChatMessage,
  makeSessionControl,
  sessionStartTags,
  type SessionAction,
  type SessionStart,
  type SessionState,
  makePermissionDecision,
  makePushSubscription,
  mentionedNames,
  normalizeRelayUrl,
  signEvent,
  threadOf,
  tallyText,
  type EventTemplate,
  type NostrEvent,
  type PermissionRequest,
  type PushSubscriptionBody,
  deviceProfileContent,
  makeDeviceProfile,
  makePresence,
  outboxFailure,
  outboxOutcome,
  outboxRetryDelayMs,
  type OutboxDecision,
} from '../../../browser-core.js'
import type { Device } from './device.js'
import { FleetModel, presenceSeconds } from './fleet.js'
import { idbAll, idbDelete, idbGet, idbPut, idbWriteMany } from './idb.js'
import {
  done,
  outgoing,
  owes,
  readRecord,
  storedOf,
  type HubAnswer,
  type Outgoing,
  type StoredOutgoing,
} from './outbox-record.js'
import { BrowserLink, type LinkState } from './link.js'
import { offline } from './network.js'
import { cspAllowedHubs } from './server-headers.js'

export interface LinkView {
  url: string
  state: LinkState | 'not allowed here'
  error: string | undefined
}

const now = () => Math.floor(Date.now() / 1000)

/** What this browser follows and fetches whole, and why it differs from a node: events/follow-kinds.ts. */
const follows = followKinds('browser')

/** Events kept per channel in IndexedDB (the newest); older ones are fetched again if needed. */
const keptPerChannel = 2000
/** How often the page looks whether a device fell silent (offline without saying so). */
const presenceTickMs = 2000

/**
 * The stored events worth keeping: every grant, revocation, definition and profile, and the
 * newest `keptPerChannel` of each channel. Returns them, and the ids to drop.
 */
function prune(events: NostrEvent[]): { keep: NostrEvent[]; drop: string[] } {
  const byChannel = new Map<string, NostrEvent[]>()
  const keep: NostrEvent[] = []
  for (const e of events) {
    const channel = follows.fullKinds.includes(e.kind) ? undefined : channelOf(e)
    if (channel === undefined) keep.push(e)
    else {
      const list = byChannel.get(channel) ?? []
      list.push(e)
      byChannel.set(channel, list)
    }
  }
  const drop: string[] = []
  for (const list of byChannel.values()) {
    list.sort((a, b) => b.created_at - a.created_at)
    keep.push(...list.slice(0, keptPerChannel))
    for (const e of list.slice(keptPerChannel)) drop.push(e.id)
  }
  return { keep, drop }
}

export type { Outgoing } from './outbox-record.js'

/**
 * A paired browser at work: its links to the fleet's hubs, the fleet as it knows it, and what it
 * sends (kept in an outbox in IndexedDB until every hub answered, as a node's outbox is).
 */
export class FleetClient {
  readonly model: FleetModel
  readonly links = signal<LinkView[]>([])
  readonly outbox = signal<Map<string, Outgoing>>(new Map())
  readonly lastRead = signal<Record<string, number>>({})
  /** Some hub has been live (caught up) since the page loaded. */
  readonly wasLive = signal(false)
  private readonly active: BrowserLink[] = []

  constructor(readonly device: Device) {
    const r = device.record
    this.model = new FleetModel(r.pubkey, r.fleet, device.secret, [
      ...r.chain,
      r.grant,
      ...(r.revocations ?? []),
      ...(r.sealing ?? []),
    ])
  }

  get me(): string {
    return this.device.record.pubkey
  }

  async start(): Promise<void> {
    this.lastRead.value = (await idbGet<Record<string, number>>('prefs', 'lastRead')) ?? {}
    this.cursors = (await idbGet<Record<string, number>>('prefs', 'cursors')) ?? {}
    this.authorityCursors =
      (await idbGet<Record<string, number>>('prefs', 'authorityCursors')) ?? {}
    // What this page verified and admitted before: shown at once, admitted again (a grant may
    // have been revoked since), never verified twice.
    performance.mark('kith-phase-prefs')
    const { keep, drop } = prune(await idbAll<NostrEvent>('events'))
    performance.mark('kith-phase-idb-events')
    await idbWriteMany(
      'events',
      drop.map((id) => [id, undefined]),
    )
    this.model.intake(keep, { trusted: true })
    performance.mark('kith-phase-intake')
    const pending = (await idbAll<StoredOutgoing>('outbox')).map(readRecord)
    this.outbox.value = new Map(pending.map((o) => [o.event.id, o]))
    this.model.intake(pending.map((o) => o.event))
    // A host that falls silent says nothing: its going is seen by looking (kith-chat/1).
    setInterval(() => this.model.presenceTick(), presenceTickMs)
    const allowed = await cspAllowedHubs()
    performance.mark('kith-phase-csp')
    const r = this.device.record
    const views: LinkView[] = []
    for (const url of r.hubs) {
      if (allowed !== undefined && !allowed.has(normalizeRelayUrl(url))) {
        views.push({ url, state: 'not allowed here', error: 'this page may not connect to it' })
        continue
      }
      const link = new BrowserLink({
        url,
        secret: this.device.secret,
        pubkey: r.pubkey,
        chain: () => [...r.chain, r.grant],
        kinds: follows.kinds,
        fullKinds: follows.fullKinds,
        deliver: (events) => this.take(events),
        cursor: this.cursors[url],
        saveCursor: (since) => {
          this.cursors = { ...this.cursors, [url]: since }
          void idbPut('prefs', 'cursors', this.cursors)
        },
        authorityCursor: this.authorityCursors[url],
        saveAuthorityCursor: (since) => {
          this.authorityCursors = { ...this.authorityCursors, [url]: since }
          void idbPut('prefs', 'authorityCursors', this.authorityCursors)
        },
        onState: () => this.refreshLinks(),
        onLive: (l) => {
          this.wasLive.value = true
          this.publishProfile()
          this.announce(l)
          this.flush(l)
        },
        onRevoked: (message) => {
          // One hub's word is not a revocation (kith-hub, AUTH): only this app's own grants,
          // which take a revocation only from someone with standing, make it forget its key.
          // Otherwise only that link ends (it shows as revoked, with the hub's words).
          const verdict = judgeHubRevoked(
            this.model.state.grants,
            this.device.record.pubkey,
            Math.floor(Date.now() / 1000),
          )
          if (verdict.verified) this.model.removed.value ??= `${message} (${verdict.reason})`
          else
            console.warn(
              `kith: ${url} says this device is revoked (${message}), but ${verdict.reason}`,
            )
        },
        log: (line) => console.info(`kith: ${line}`),
      })
      this.active.push(link)
      views.push({ url, state: 'connecting', error: undefined })
    }
    this.links.value = views
    // What no hub on the list is owed any more (every one answered; a hub taken off the list is
    // owed nothing) leaves now.
    await this.settle([...this.outbox.value.values()])
    // Offline: drop the dead sockets. Back online: dial at once and catch up from the cursor.
    offline.subscribe((isOffline) => {
      for (const l of this.active) {
        if (isOffline) l.pause()
        else l.nudge()
      }
    })
    for (const l of this.active) l.start()
  }

  private cursors: Record<string, number> = {}
  /** Per hub: where the next fetch of the authority kinds starts (link.ts). */
  private authorityCursors: Record<string, number> = {}

  /** Events from a hub: admitted by the model, and what it kept stored for the next load. */
  private take(events: NostrEvent[]): void {
    const kept = this.model.intake(events)
    if (kept.length > 0)
      idbWriteMany(
        'events',
        kept.map((e) => [e.id, e]),
      ).catch((err: unknown) => {
        // Storage full or refused: the events are shown all the same and fetched again next time.
        console.warn(`kith: could not store events (${String(err)})`)
      })
  }

  stop(): void {
    for (const l of this.active) l.stop()
  }

  private refreshLinks(): void {
    const byUrl = new Map(this.active.map((l) => [l.url, l]))
    this.links.value = this.links.value.map((v) => {
      const l = byUrl.get(v.url)
      return l === undefined ? v : { url: v.url, state: l.state, error: l.lastError }
    })
  }

  /** Whether some hub is live for this device now. */
  get live(): boolean {
    return this.active.some((l) => l.state === 'live')
  }

  /** The device's profile (kind 0), so others see its name: sent when it is not the hub's. */
  private publishProfile(): void {
    const content = deviceProfileContent(this.device.record.name)
    if (this.profileSent || this.model.profile(this.me)?.content === content) return
    this.profileSent = true
    void this.send(makeDeviceProfile(this.device.record.name, now()))
  }
  private profileSent = false

  /**
   * This browser's presence (kind 24141, kith-chat/1) to a live hub, then once a minute while it
   * stays live: nodes that had not heard it answer with their own, so the Fleet page shows who
   * is online at once rather than within a minute. Not kept in the outbox: presence is ephemeral,
   * and a late one would say something untrue.
   */
  private announce(link: BrowserLink): void {
    const send = () => this.sendPresence(link, 'online')
    send()
    if (!this.announcing.has(link)) {
      this.announcing.add(link)
      setInterval(send, presenceSeconds * 1000)
    }
    if (!this.saysGoodbye) {
      // A page that closes or reloads stops cleanly, as a node does: it says `offline`
      // (kith-chat/1), so the nodes answer the reloaded page's `online` at once, as a newcomer's,
      // and its Fleet page shows them online rather than "no presence seen" for a minute.
      this.saysGoodbye = true
      addEventListener('pagehide', () => {
        for (const l of this.announcing) this.sendPresence(l, 'offline')
      })
    }
  }
  private readonly announcing = new Set<BrowserLink>()
  private saysGoodbye = false

  private sendPresence(link: BrowserLink, status: 'online' | 'offline'): void {
    if (link.state !== 'live') return
    const event = signEvent(makePresence(status, [], now(), presenceSeconds), this.device.secret)
    link.publish(event).catch((err: unknown) => {
      console.info(`kith: ${link.url}: presence not sent (${String(err)})`)
    })
  }

  /** Signs, keeps in the outbox, shows, and sends to every live hub. */
  private async send(template: EventTemplate): Promise<NostrEvent> {
    // In a fleet that seals (kith-e2e/1): the envelopes the channel needs go first, then the
    // sealed event (its id is new each time: no duplicate to step past).
    if (this.model.e2e.seals(template)) {
      const { before, event } = this.model.e2e.seal(template)
      for (const e of [...before, event]) await this.queue(e)
      return event
    }
    let event = signEvent(template, this.device.secret)
    // Two identical messages in one second would be one event (ids hash seconds): move on.
    while (this.model.event(event.id) !== undefined || this.outbox.value.has(event.id))
      event = signEvent({ ...template, created_at: event.created_at + 1 }, this.device.secret)
    await this.queue(event)
    return event
  }

  /** Keeps `event` in the outbox, shows it, and sends it to every live hub. */
  private async queue(event: NostrEvent): Promise<void> {
    const out = outgoing(event, {})
    await idbPut('outbox', event.id, storedOf(out))
    this.setOutgoing(out)
    this.take([event])
    for (const l of this.active) if (l.state === 'live') this.deliver(l, out)
  }

  /** Shows `o` (or, with `gone`, that it left the outbox). */
  private setOutgoing(o: Outgoing, gone = false): void {
    const next = new Map(this.outbox.value)
    if (gone) next.delete(o.event.id)
    else next.set(o.event.id, o)
    this.outbox.value = next
  }

  /**
   * The hubs an event is owed to: those this page links to. A hub taken off the device's list, or
   * one this page may not reach (`not allowed here`), is owed nothing: the event would otherwise
   * wait for it for ever.
   */
  private get owedHubs(): string[] {
    return this.active.map((l) => l.url)
  }

  /** Drops from the outbox (IndexedDB and view) those of `records` no hub is owed any more. */
  private async settle(records: Outgoing[]): Promise<void> {
    const hubs = this.owedHubs
    const gone = records.filter((o) => done(o, hubs))
    if (gone.length === 0) return
    const next = new Map(this.outbox.value)
    for (const o of gone) next.delete(o.event.id)
    this.outbox.value = next
    await idbWriteMany(
      'outbox',
      gone.map((o) => [o.event.id, undefined]),
    )
  }

  /**
   * Records `hub`'s answer for good to the event `id`: shown at once (sent as soon as one hub
   * took it), kept in IndexedDB, and the event leaves once every hub answered and one took it.
   */
  private async answered(id: string, hub: string, answer: HubAnswer): Promise<void> {
    const was = this.outbox.value.get(id)
    if (was === undefined) return // dismissed meanwhile
    const o = outgoing(was.event, { ...was.answers, [hub]: answer }, was.legacyRefusal)
    if (done(o, this.owedHubs)) {
      this.setOutgoing(o, true)
      await idbDelete('outbox', id)
      return
    }
    this.setOutgoing(o)
    await idbPut('outbox', id, storedOf(o))
  }

  /** Sends `link` what its hub is still owed. */
  private flush(link: BrowserLink): void {
    for (const o of this.outbox.value.values()) if (owes(o, link.url)) this.deliver(link, o)
  }

  /**
   * A private channel's definition in effect goes to a hub before the channel's events
   * (kith-channels, "Definitions first"), unless that hub took it before: a hub without it
   * would take the channel for open and pass the event to the whole fleet. Undefined when the
   * event may go; else the decision for it instead (as the node's outbox): refused, never sent,
   * or the definition's own retry or revoked.
   */
  private async definitionsTo(
    link: BrowserLink,
    event: NostrEvent,
  ): Promise<OutboxDecision | undefined> {
    let holds = this.hubHolds.get(link)
    if (holds === undefined) this.hubHolds.set(link, (holds = new Set()))
    const held = holds
    const p = definitionsFirst(
      this.model.state.channels,
      event,
      (id) => held.has(id),
      (id) => this.model.definition(id),
      now(),
    )
    if ('refuse' in p) return { outcome: 'refused', message: `not sent: ${p.refuse}` }
    for (const d of p.first) {
      const answer = await link.publish(d).then(outboxOutcome, outboxFailure)
      if (answer.outcome === 'refused')
        return {
          outcome: 'refused',
          message: `not sent: this hub refused the definition of #${defName(d)} it needs first (${answer.message})`,
        }
      if (answer.outcome !== 'delivered') return answer
      held.add(d.id)
    }
    return undefined
  }
  private readonly hubHolds = new WeakMap<BrowserLink, Set<string>>()
  /** Per link: the events sent to it and not yet answered (a flush does not send them twice). */
  private readonly sending = new WeakMap<BrowserLink, Set<string>>()
  /** Per link: `retry` answers in a row (link/outbox-answer.ts), and the flush waiting for it. */
  private readonly retries = new WeakMap<
    BrowserLink,
    { attempt: number; timer: ReturnType<typeof setTimeout> | undefined }
  >()

  /**
   * Sends `o` to `link` and acts on what the answer means (link/outbox-answer.ts, as the node's
   * outbox): delivered and refused are recorded for this hub (`answered`), and the event stays in
   * the outbox until every hub answered so; a hub down or saying "not now" gets it when it is
   * next live or after the backoff, as a node's outbox does.
   */
  private deliver(link: BrowserLink, o: Outgoing): void {
    let sending = this.sending.get(link)
    if (sending === undefined) this.sending.set(link, (sending = new Set()))
    const inFlight = sending
    const id = o.event.id
    if (inFlight.has(id)) return
    inFlight.add(id)
    this.definitionsTo(link, o.event)
      .then(
        (first) => first ?? link.publish(o.event).then(outboxOutcome, outboxFailure),
        outboxFailure,
      )
      .finally(() => inFlight.delete(id))
      .then(async (d) => {
        const retry = this.retries.get(link) ?? { attempt: 0, timer: undefined }
        this.retries.set(link, retry)
        if (d.outcome === 'delivered' || d.outcome === 'refused') retry.attempt = 0
        if (!this.outbox.value.has(id)) return
        switch (d.outcome) {
          case 'delivered':
            await this.answered(id, link.url, { outcome: 'delivered', message: d.message })
            return
          case 'refused':
            // A refusal is recorded for this hub and shown (while no hub took the event), never
            // retried blindly.
            console.info(`kith: ${link.url} refused ${id.slice(0, 12)}…: ${d.message}`)
            await this.answered(id, link.url, { outcome: 'refused', message: d.message })
            return
          case 'retry':
            // Stays queued: sent again after the backoff, or on the next live link.
            console.info(`kith: ${link.url}: ${d.message}`)
            if (retry.timer !== undefined) return
            retry.timer = setTimeout(() => {
              retry.timer = undefined
              if (link.state === 'live') this.flush(link)
            }, outboxRetryDelayMs(retry.attempt++))
            return
          case 'revoked':
            // Stays queued: the link ends as revoked (link.ts) and this app judges the claim.
            console.warn(`kith: ${link.url}: ${d.message}`)
            return
        }
      })
      .catch((err: unknown) => console.error(`kith: outbox to ${link.url}: ${String(err)}`))
  }

  /**
   * Removes a refused event from the outbox (the person has read why): no hub still owed it gets
   * it from here.
   */
  async dismiss(id: string): Promise<void> {
    const o = this.outbox.value.get(id)
    if (o === undefined) return
    await idbDelete('outbox', id)
    this.setOutgoing(o, true)
  }

  /**
   * A chat message: @names resolved as a node resolves them (own person first; ambiguous names
   * refused with the choices), a reply threaded (NIP-10), an interrupt naming the open prompts of
   * the agents it mentions, and the fleet tag. Throws KithError('usage') with what to fix.
   */
  async post(
    channel: string,
    text: string,
    opts: { reply?: string; interrupt?: boolean; start?: SessionStart } = {},
  ): Promise<NostrEvent> {
    const m = this.model
    const mentions = [
      ...new Set(
        mentionedNames(text)
          .map((n) => m.names.resolve(n, this.me))
          .filter((p): p is string => p !== undefined),
      ),
    ]
    const agents = new Set(mentions.filter((p) => m.isAgent(p)))
    if (opts.interrupt === true && agents.size === 0)
      throw new KithError('usage', 'an interrupt names the agent it stops: mention it (@name)')
    let replyTo: { id: string; root?: string } | undefined
    if (opts.reply !== undefined) {
      const parent = m.event(opts.reply)
      if (parent === undefined) throw new KithError('usage', 'the message replied to is not here')
      const root = threadOf(parent).root
      replyTo = { id: parent.id, ...(root === undefined ? {} : { root }) }
    }
    const message = makeChatMessage(
      {
        channel,
        text,
        mentions,
        fleet: this.device.record.fleet,
        ...(replyTo === undefined ? {} : { replyTo }),
        ...(opts.interrupt === true
          ? { interrupt: true, interruptPrompts: m.openPrompts(channel, agents) }
          : {}),
      },
      now(),
    )
    // A new session somewhere (kith session new): where it starts, on the prompt itself.
    if (opts.start !== undefined) {
      if (agents.size === 0)
        throw new KithError('usage', 'a session is started by mentioning its agent (@name)')
      message.tags.push(...sessionStartTags(opts.start))
    }
    return this.send(message)
  }

  /**
   * A request about one of the fleet's sessions (kind 4150, as kith session close|set|diff): its
   * host answers with a notice in the session's thread (FleetModel.answerTo).
   */
  async sessionRequest(s: SessionState, request: SessionAction): Promise<NostrEvent> {
    return this.send(
      makeSessionControl(
        {
          agent: s.agent,
          channel: s.channel,
          ...(s.thread === undefined ? {} : { thread: s.thread }),
          fleet: this.device.record.fleet,
          request,
        },
        // Two requests in one second would be one event: each goes after the last.
        (this.lastRequestAt = Math.max(now(), this.lastRequestAt + 1)),
      ),
    )
  }
  private lastRequestAt = 0

  /** Answers a permission card with one of its options (a kind-4143 decision). */
  async decide(request: PermissionRequest, optionId: string): Promise<NostrEvent> {
    if (!this.model.requestOpen(request))
      throw new KithError('error', `"${request.title}" is no longer open`)
    const count = this.model.tallyOf(request)
    const me = this.model.myPerson()
    const kind = request.options.find((o) => o.optionId === optionId)?.kind ?? ''
    if (
      count !== undefined &&
      me !== undefined &&
      count.allowedBy.includes(me) &&
      kind.startsWith('allow')
    )
      throw new KithError('error', `you already allowed it (${tallyText(count)})`)
    return this.send(
      makePermissionDecision(
        {
          request: { id: request.id, channel: request.channel, agent: request.agent },
          fleet: this.device.record.fleet,
          optionId,
        },
        now(),
      ),
    )
  }

  /**
   * Hands one of this person's nodes this browser's Web Push subscription and choices (or `off`),
   * sealed to that node (kith-notify/1): a kind-34161 event.
   */
  async setPush(body: PushSubscriptionBody, sender: string): Promise<NostrEvent> {
    return this.send(makePushSubscription(body, this.device.secret, sender, now()))
  }

  /** Cancels an agent's turn in a channel: a kind-4144 naming the prompts still open to it. */
  async cancel(channel: string, agent: string): Promise<NostrEvent> {
    const prompts = this.model.openPrompts(channel, new Set([agent]))
    if (prompts.length === 0)
      throw new KithError('not-found', 'nothing to cancel: no prompt to it is waiting here')
    return this.send(
      makeAgentCancel({ channel, fleet: this.device.record.fleet, agent, prompts }, now()),
    )
  }

  async markRead(channel: string): Promise<void> {
    const last = this.model.lastActivity(channel)
    if ((this.lastRead.value[channel] ?? 0) >= last) return
    this.lastRead.value = { ...this.lastRead.value, [channel]: last }
    await idbPut('prefs', 'lastRead', this.lastRead.value)
  }
}

/** The channel a definition names (its d tag). */
function defName(definition: NostrEvent): string {
  return definition.tags.find((t) => t[0] === 'd')?.[1] ?? '?'
}
