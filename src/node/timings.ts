/**
 * Every timeout and interval of the node (the daemon, its outbox, its agents' bridge), each with
 * its reason. NodeOptions can override some (tests); these are the defaults. The agent host's own
 * are in acp/timings.ts, the hub's in hub/limits.ts, a link's in link/hub-link.ts and
 * link/catch-up.ts.
 */

/** How often a node says it is up (seconds); published in its presence as `interval`. */
export const presenceIntervalSeconds = 60
/**
 * A node answers a device it has not heard from before (or that was offline) with its own
 * presence at once, so a node that just started knows who is up without waiting an interval;
 * at most once per this many ms, so two nodes never answer each other in a loop.
 */
export const presenceAnswerMs = 5000
/** An agent's state changed: the fleet hears it once the burst settles (a turn starts many). */
export const presenceSettleMs = 200
/** On stop, the offline presence may take this long to reach the hubs: a dead hub holds no stop. */
export const offlinePresenceWaitMs = 500

/** `kith send` through the node waits this long for the first hub's OK, then says "queued". */
export const sendWaitMs = 5000
/**
 * An event queued while the outbox's last pass to a hub was finishing is sent after this long,
 * rather than waiting for the next trigger (a new event, a reconnect).
 */
export const outboxRetryMs = 1000

/** A turn's session/updates are coalesced into one observer frame per this long (or 50 updates). */
export const observerFrameMs = 100
/** A permission request waits this long for a person, then is answered cancelled. */
export const defaultPermissionTimeoutMs = 5 * 60_000
/** How long a decided request is remembered, to tell a late answer it changed nothing. */
export const decidedMemoryMs = 10 * 60_000
/**
 * A sealed event opened only when its key came later (kith-e2e/1) is acted on (a prompt run, a
 * decision applied) only when dated within this of now: the 300 s of kith-agents' Binding.
 * Older ones are history: shown, never run.
 */
export const e2eFreshSeconds = 300
