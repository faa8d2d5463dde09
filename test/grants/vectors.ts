import { readFileSync } from 'node:fs'
import type { NostrEvent } from '../../src/events/event.js'

export type Expect = 'accepted' | { held: true } | { rejected: string }
export interface VectorCase {
  name: string
  steps: { event: NostrEvent; expect: Expect }[]
  queries: { key: string; kind?: number; channel?: string; at?: number; expect: string }[]
}
export interface GrantVectors {
  founder: string
  now: number
  maxDepth: number
  skewSeconds: number
  keys: Record<string, string>
  cases: VectorCase[]
}

export const vectors = JSON.parse(
  readFileSync(new URL('../vectors/grants.json', import.meta.url), 'utf8'),
) as GrantVectors
