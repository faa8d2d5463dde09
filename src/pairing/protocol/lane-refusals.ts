import type { PairCode_ } from './errors.js'

/**
 * The hub's pairing-lane refusals that end a pairing (kith-pair, "Transport"), each with the
 * PairCode both screens show for it. The wire carries only NIP-01 text, so the words are the code:
 * they are declared here once, the hub (src/hub/pairing-lane.ts) sends them after `restricted: `,
 * and the parties read them back by exact match against this table, not by guessing at wording.
 */
export const laneRefusals = {
  expired: 'pairing: this code expired',
  reused: 'pairing: this code was already used',
  'third-party': 'pairing: another device tried to use this code; cancelled for safety',
  /** Sent by a hub that tells a party its peer disconnected (Kith's own hub does not). */
  interrupted: 'pairing: the other side left',
} as const satisfies Partial<Record<PairCode_, string>>

/** The PairCode a hub's refusal means (`restricted: pairing: …`), or undefined for any other. */
export function laneRefusalCode(message: string): keyof typeof laneRefusals | undefined {
  const words = message.replace(/^[a-z-]+: (?=pairing: )/, '')
  for (const [code, text] of Object.entries(laneRefusals)) {
    if (words === text) return code as keyof typeof laneRefusals
  }
  return undefined
}
