import { SetSealer, type NegentropySet } from '../events/nip77-set.js'

/**
 * A set's items as the store reads them, in NIP-01 order (created_at descending, then id
 * ascending), into flat arrays that grow by doubling.
 */
export class SetReader {
  private times = new Float64Array(256)
  private ids = Buffer.allocUnsafeSlow(256 * 32)
  length = 0

  add(createdAt: number, idHex: string): void {
    if (this.length === this.times.length) this.grow()
    this.times[this.length] = createdAt
    this.ids.write(idHex, this.length * 32, 32, 'hex')
    this.length++
  }

  /** Every item is read: the sealing, done a step at a time. */
  seal(): SetSealer {
    return new SetSealer(
      this.times.subarray(0, this.length),
      this.ids.subarray(0, this.length * 32),
    )
  }

  private grow(): void {
    const times = new Float64Array(this.times.length * 2)
    times.set(this.times)
    const ids = Buffer.allocUnsafeSlow(this.ids.length * 2)
    this.ids.copy(ids)
    this.times = times
    this.ids = ids
  }
}

/** Seals items given in NIP-01 order in one go (tests and small sets). */
export function sealNewestFirst(
  items: readonly { timestamp: number; id: string }[],
): NegentropySet {
  const reader = new SetReader()
  for (const item of items) reader.add(item.timestamp, item.id)
  const sealer = reader.seal()
  sealer.step(items.length)
  return sealer.set
}
