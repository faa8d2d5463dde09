import { channelOf, outcomeOf, threadOf } from '../events/chat.js'
import { isNotice } from '../events/agent-binding.js'
import type { NostrEvent } from '../events/event.js'
import { Kind } from '../events/kinds.js'
import { optionFor } from '../events/permission-options.js'
import { parsePermissionRequest } from '../events/permission-request.js'
import { mayAct, type Action } from '../grants/authority.js'
import { cardTally, decisionStanding } from '../grants/decision-standing.js'
import { tallyText, type Tally } from '../grants/quorum.js'
import type { NotifyClass, PushPayload } from '../events/push.js'

/** What the classifier needs to know of the fleet, from the node that runs it. */
export interface ClassifyContext {
  /** The person (owner key) this node notifies. */
  person: string
  /** The person a key belongs to now (undefined: not a member). */
  personOf(key: string): string | undefined
  /** Whether the key is an agent's. */
  isAgent(key: string): boolean
  nameOf(key: string): string
  /** A stored event by id (a reply's prompt). */
  event(id: string): NostrEvent | undefined
  fleet: string
  now(): number
  /**
   * Whether the fleet seals its channels (kith-e2e/1): cards say so (the decision is sealed),
   * and every notice carries a `brief` without the sealed content for third-party targets.
   */
  seals?(): boolean
  /**
   * Whether `author` may take `action` (a decision) for `agent`, by the authority table with the
   * agent's real policies where this node hosts it. Absent: the agent's own person only.
   */
  mayDecide?(author: string, agent: string, action: Action): boolean
  /**
   * Whether `device` may push through `sender` at `at` (push.subscription: the same person),
   * as admission asked it (event-authority.ts mayPushThrough). Absent: the same person now.
   */
  mayPushThrough?(device: string, sender: string, at: number): boolean
  /** The decisions (4143) known here on the card `request`: a quorum card's tally is theirs. */
  decisionsOf?(request: string): NostrEvent[]
}

/** One thing worth a person's attention, before it is addressed to any target. */
export interface Notice {
  eventId: string
  class: NotifyClass
  /** finished: how long the turn ran (seconds), which each target compares to its threshold. */
  ranSeconds?: number
  /** Unix seconds after which it is not worth sending (a card's expiry, an old mention). */
  until: number
  payload: Extract<PushPayload, { type: 'notify' }>
}

/**
 * An event older than this when it arrives (a node catching up after a night off) notifies
 * nobody: a flood of stale news is the storm this avoids. Cards count until they expire.
 */
export const staleSeconds = 600

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim()

/**
 * The notice without what a sealed fleet keeps from its hubs (kith-e2e/1): who, which channel,
 * what kind of news, as much as a hub sees; never the text or the tool call.
 */
function briefIf(
  ctx: ClassifyContext,
  title: string,
  body: string,
): { brief?: { title: string; body: string } } {
  return ctx.seals?.() === true ? { brief: { title, body } } : {}
}

function openPath(channel: string, thread: string | undefined): string {
  return `#/c/${encodeURIComponent(channel)}${thread === undefined ? '' : `/t/${thread}`}`
}

/**
 * What an admitted event means for this node's person, if anything. Pure apart from the lookups
 * in `ctx`. The rules (nips/kith-notify.md, "What notifies"):
 * - cards: a 4142 of an agent of this person's, or asked in a turn this person prompted;
 * - errors: an agent's reply or notice whose `outcome` tag says failed or refused, in reply to
 *   this person or by this person's agent (the tag only: a leading ⚠ is text); a cancelled turn,
 *   and any other notice, is nothing;
 * - finished: an agent's (non-notice) reply to a prompt of this person's;
 * - mentions: a chat message by another person with a `p` of this person's keys.
 */
export function classify(event: NostrEvent, ctx: ClassifyContext): Notice | undefined {
  const now = ctx.now()
  const mine = (key: string | undefined) =>
    key !== undefined && (key === ctx.person || ctx.personOf(key) === ctx.person)
  if (event.kind === Kind.PermissionRequest) {
    let card: ReturnType<typeof parsePermissionRequest>
    try {
      card = parsePermissionRequest(event)
    } catch {
      // Malformed cards are refused by the host that reads them; nobody is paged for one.
      return undefined
    }
    if (card.expires <= now) return undefined
    if (card.fleet !== undefined && card.fleet !== ctx.fleet) return undefined
    // card.request is the agent's own: a member's key signing one pages nobody.
    if (!mayAct('card.request', ctx.isAgent(card.agent) ? ['agent', 'member'] : ['member']))
      return undefined
    if (!mine(card.agent) && !mine(card.prompter)) return undefined
    // The notification's Allow is the once option (never allow_always, even listed first).
    const allow = optionFor(card.options, 'allow')
    const reject = optionFor(card.options, 'reject')
    const agent = ctx.nameOf(card.agent)
    // A quorum card says how many people it needs and how many allowed, as every surface does.
    const count = cardTally(event, ctx.decisionsOf?.(event.id) ?? [], ctx)
    const needs = count === undefined ? '' : ` · 👥 ${tallyText(count)}`
    return {
      eventId: event.id,
      class: 'cards',
      until: card.expires,
      payload: {
        type: 'notify',
        class: 'cards',
        tag: event.id,
        title: `${agent} asks: ${oneLine(card.title)}`,
        body: `#${card.channel} · ${card.toolKind}${card.sensitive === undefined ? '' : ` · ${card.sensitive}`}${needs}`,
        open: openPath(card.channel, card.prompt),
        card: {
          id: event.id,
          channel: card.channel,
          agent: card.agent,
          fleet: card.fleet ?? ctx.fleet,
          ...(allow === undefined ? {} : { allow: allow.optionId }),
          ...(reject === undefined ? {} : { reject: reject.optionId }),
          ...(ctx.seals?.() === true ? { sealed: true } : {}),
        },
        ...briefIf(ctx, `${agent} asks for permission`, `#${card.channel}${needs}`),
      },
    }
  }
  if (event.kind !== Kind.ChatMessage) return undefined
  if (now - event.created_at > staleSeconds) return undefined
  const channel = channelOf(event) ?? 'general'
  const { root, parent } = threadOf(event)
  const text = oneLine(event.content)
  const author = ctx.nameOf(event.pubkey)
  const until = event.created_at + staleSeconds
  if (ctx.isAgent(event.pubkey)) {
    const prompt = parent === undefined ? undefined : ctx.event(parent)
    const toMe = prompt !== undefined && mine(prompt.pubkey)
    // A turn or a request that failed or was refused (kith-agents/1 `outcome`) is an error,
    // whatever its length or its text; a notice without one is nothing.
    const outcome = outcomeOf(event)?.kind
    const failed = outcome === 'failed' || outcome === 'refused'
    if (outcome === 'cancelled') return undefined
    if (isNotice(event) && !failed) return undefined
    if (failed) {
      if (!toMe && !mine(event.pubkey)) return undefined
      const title = `${author} in #${channel}`
      return {
        eventId: event.id,
        class: 'errors',
        until,
        payload: {
          type: 'notify',
          class: 'errors',
          tag: event.id,
          title,
          body: text,
          open: openPath(channel, root),
          ...briefIf(ctx, title, 'an error: open Kith to read it'),
        },
      }
    }
    if (!toMe) return undefined
    const ranSeconds = Math.max(0, event.created_at - prompt.created_at)
    const title = `${author} finished in #${channel} (${Math.round(ranSeconds / 60)} min)`
    return {
      eventId: event.id,
      class: 'finished',
      ranSeconds,
      until,
      payload: {
        type: 'notify',
        class: 'finished',
        tag: event.id,
        title,
        body: text,
        open: openPath(channel, root),
        ...briefIf(ctx, title, 'open Kith to read the answer'),
      },
    }
  }
  if (mine(event.pubkey)) return undefined
  const mentioned = event.tags.some((t) => t[0] === 'p' && t[1] !== undefined && mine(t[1]))
  if (!mentioned) return undefined
  return {
    eventId: event.id,
    class: 'mentions',
    until,
    payload: {
      type: 'notify',
      class: 'mentions',
      tag: event.id,
      title: `${author} in #${channel}`,
      body: text,
      open: openPath(channel, root ?? event.id),
      ...briefIf(ctx, `${author} mentioned you in #${channel}`, 'open Kith to read it'),
    },
  }
}

/**
 * Why `decision` does not withdraw the notifications of the card `request`, or undefined when it
 * does: only a decision its hosting node would act on (kith-notify, "Withdrawal"): bound to the
 * card as the host binds it (events/permission-decision.ts: its fleet, h, p, dated within the
 * card's life, one of its options) and signed by someone who may approve for the agent (the
 * authority table). Anything else (a non-approver's answer, a stray one) leaves the card up for
 * the person who can answer it. A quorum card (kith-agents, "Quorum") is withdrawn only once its
 * tally, over every decision known here and this one, is allowed (N distinct people, two devices
 * of one person counting once) or rejected; while it waits, `waitingTally` says how it stands.
 */
export function withdrawRefusal(
  decision: NostrEvent,
  request: NostrEvent,
  ctx: ClassifyContext,
): string | undefined {
  const refusal = decisionStanding(decision, request, ctx)
  if (refusal !== undefined) return refusal
  const count = quorumTally(decision, request, ctx)
  if (count?.state === 'waiting') return `a quorum card waits for more people (${tallyText(count)})`
  return undefined
}

/**
 * The tally of a quorum card that `decision` (one that stands) leaves waiting for more people,
 * for the notification that replaces the card's with it; undefined otherwise.
 */
export function waitingTally(
  decision: NostrEvent,
  request: NostrEvent,
  ctx: ClassifyContext,
): Tally | undefined {
  if (decisionStanding(decision, request, ctx) !== undefined) return undefined
  const count = quorumTally(decision, request, ctx)
  return count?.state === 'waiting' ? count : undefined
}

/** `ctx` with `decision` among the card's known decisions (it may not be stored yet). */
export function withDecision(ctx: ClassifyContext, decision: NostrEvent): ClassifyContext {
  return {
    ...ctx,
    decisionsOf: (request) => {
      const known = ctx.decisionsOf?.(request) ?? []
      const mine = decision.tags.some((t) => t[0] === 'e' && t[1] === request)
      return mine && !known.some((d) => d.id === decision.id) ? [...known, decision] : known
    },
  }
}

function quorumTally(
  decision: NostrEvent,
  request: NostrEvent,
  ctx: ClassifyContext,
): Tally | undefined {
  return cardTally(request, withDecision(ctx, decision).decisionsOf!(request.id), ctx)
}
