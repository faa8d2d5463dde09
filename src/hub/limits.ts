/** The hub's explicit limits; every one is published in the NIP-11 document. */
export interface HubLimits {
  /** Largest frame answered with a NIP-01 refusal; larger frames get invalid: "frame too large". */
  maxFrameBytes: number
  /** Frames above this are not even read: the socket is closed with 1009 (ws maxPayload). */
  hardFrameBytes: number
  maxContentBytes: number
  maxTags: number
  maxTagItemLength: number
  maxSubscriptions: number
  maxFilters: number
  /** Most values one filter array may hold; more is an over-wide filter. */
  maxFilterValues: number
  defaultLimit: number
  maxLimit: number
  maxSubIdLength: number
  /** Sustained events per second per author key; 0 disables rate limiting. */
  eventsPerSecond: number
  /** Burst allowance per author key. */
  eventBurst: number
  /** How far in the future created_at may be. Old events are fine: outboxes deliver late. */
  maxFutureSeconds: number
  heartbeatMs: number
}

export const defaultHubLimits: HubLimits = {
  maxFrameBytes: 128 * 1024,
  hardFrameBytes: 1024 * 1024,
  maxContentBytes: 64 * 1024,
  maxTags: 1000,
  maxTagItemLength: 4096,
  maxSubscriptions: 20,
  maxFilters: 10,
  maxFilterValues: 1000,
  defaultLimit: 500,
  maxLimit: 5000,
  maxSubIdLength: 64,
  eventsPerSecond: 100,
  eventBurst: 1000,
  maxFutureSeconds: 900,
  heartbeatMs: 30_000,
}
