/** Event kinds Kith uses. Numbers are specified in nips/ and change there, never silently. */
export const Kind = {
  Profile: 0,
  ChatMessage: 9,
  Grant: 4140,
  Revocation: 4141,
  PermissionRequest: 4142,
  PermissionDecision: 4143,
  AgentControl: 4144,
  /** An epoch key NIP-44 encrypted to one member key (kith-e2e). */
  KeyEnvelope: 4145,
  ClientAuth: 22242,
  Pairing: 24140,
  Presence: 24141,
  ObserverFrame: 24142,
  /** Addressable (`d` = channel name): who may read and post in a channel (kith-channels). */
  ChannelDefinition: 34140,
  /** Addressable (`d` = kith-push): a node that sends Web Push, with its VAPID key (kith-notify). */
  PushSender: 34160,
  /** Addressable (`d` = kith-push): a device's Web Push subscription, sealed to one sender. */
  PushSubscription: 34161,
  /** A person's request about an agent's session: close it, change its mode or model. */
  SessionControl: 4150,
  /** Addressable (`d` = agent:channel:thread): an agent's session as its hosting node reports it. */
  SessionState: 34150,
  /**
   * Addressable (`d` = the agent's key): the rule an agent's hosting node judges by (who may
   * prompt it and approve its calls, its permissions mode, its quorum), signed by a device of its
   * owner (kith-agents, "Agent policy").
   */
  AgentPolicy: 34151,
  /** Addressable (`d` = "kith-e2e"): whether the fleet seals its channels (kith-e2e). */
  FleetSetting: 34145,
} as const

export type KindClass = 'regular' | 'replaceable' | 'ephemeral' | 'addressable'

/** NIP-01: 0, 3 and 10000–19999 keep only the newest per (pubkey, kind). */
export function isReplaceableKind(kind: number): boolean {
  return kind === 0 || kind === 3 || (kind >= 10000 && kind < 20000)
}

/** NIP-01: 20000–29999 are relayed to live subscribers and never stored. */
export function isEphemeralKind(kind: number): boolean {
  return kind >= 20000 && kind < 30000
}

/** NIP-01: 30000–39999 keep only the newest per (pubkey, kind, d tag). */
export function isAddressableKind(kind: number): boolean {
  return kind >= 30000 && kind < 40000
}

export function isRegularKind(kind: number): boolean {
  return classifyKind(kind) === 'regular'
}

export function classifyKind(kind: number): KindClass {
  if (isReplaceableKind(kind)) return 'replaceable'
  if (isEphemeralKind(kind)) return 'ephemeral'
  if (isAddressableKind(kind)) return 'addressable'
  return 'regular'
}
