/**
 * Every timeout and interval of the agent host, each with its reason. HostOptions can override
 * the turn and breaker ones (tests, `kith up` flags); these are the defaults.
 */

/** A turn with no output from the agent for this long is ended (any stdout byte resets it). */
export const defaultIdleTimeoutMs = 15 * 60_000
/** No turn runs longer than this, output or not: an agent in a loop must end some time. */
export const defaultTurnCapMs = 2 * 3600_000
/** The watchdog looks this often at most: a quarter of the shorter limit, within 10 ms–1 s. */
export const watchdogTickMaxMs = 1000
export const watchdogTickMinMs = 10

/** After a person's cancel, how long the agent may take to end its turn before it is killed. */
export const defaultCancelGraceMs = 5000
/** After the watchdog's cancel: shorter, since the agent was already silent or overlong. */
export const watchdogCancelGraceMs = 2000

/** Crashes are counted over this window… */
export const defaultBreakerWindowMs = 60_000
/** …and this many in it open the circuit breaker… */
export const defaultBreakerCrashes = 3
/** …which keeps the agent stopped this long, instead of respawning it in a loop. */
export const defaultBreakerOpenMs = 5 * 60_000
/** First respawn delay after a crash; doubles per recent crash, jittered… */
export const defaultRespawnBaseMs = 1000
/** …up to this. */
export const respawnMaxMs = 30_000
/** Crashes this recent count toward that doubling. */
export const respawnRecentMs = 60_000

/**
 * When a call fails because the agent died, how long to wait for its exit event, so whoever
 * watches the process has counted the crash before the caller hears of it.
 */
export const crashSettleMs = 2000
/** SIGTERM, then SIGKILL after this long: an agent that ignores TERM must not outlive the node. */
export const killGraceMs = 2000
/**
 * After session/load, the session must be this quiet before a turn: some adapters (gemini-cli
 * 0.61) go on replaying the old conversation after answering the load…
 */
export const loadQuietMs = 150
/** …but no longer than this in all. */
export const loadQuietMaxMs = 3000
