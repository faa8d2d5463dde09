import { generateSecretKey } from 'nostr-tools/pure'
import { signEvent } from '../events/event.js'
import { makePairingEvent, pairingLaneFilter } from '../events/pairing.js'
import type { RelayClient, Subscription } from '../link/relay-client.js'
import { PairError } from './protocol/errors.js'
import { laneRefusalCode } from './protocol/lane-refusals.js'
import { parsePairMessage, type PairMessage } from './protocol/handshake.js'

/**
 * Maps a hub's refusal on the pairing lane to what both screens show (kith-pair). Its own text
 * always goes with it: a person must see why (`invalid: pairing frames are at most 4096 bytes`).
 */
export function laneError(reason: string): PairError {
  return new PairError(laneRefusalCode(reason) ?? 'hub-refused', reason)
}

/**
 * One side's pairing lane over a RelayClient (any socket: a browser's WebSocket included):
 * kind-24140 events in room `pid` (`d` tag), each signed by a throwaway key made for this
 * pairing, since the ephemeral ECDH key must stay hidden until REVEAL. Messages from the other
 * party queue up; a refusal, a burnt room or a disconnect fails every wait with its PairError.
 */
export class RelayPairingLane {
  private readonly key = generateSecretKey()
  private readonly inbox: PairMessage[] = []
  private waiter: { resolve: (m: PairMessage) => void; reject: (e: PairError) => void } | undefined
  private failure: PairError | undefined
  private sub: Subscription | undefined

  private constructor(
    private readonly client: RelayClient,
    readonly pid: string,
  ) {}

  /** Joins room `pid` on `client`; rejects with the lane's refusal (used, burnt, expired). */
  static open(client: RelayClient, pid: string): Promise<RelayPairingLane> {
    const lane = new RelayPairingLane(client, pid)
    return new Promise((resolve, reject) => {
      let subscribed = false
      lane.sub = client.subscribe(
        [pairingLaneFilter(pid)],
        {
          onEvent: (event) => {
            let m: PairMessage
            try {
              m = parsePairMessage(JSON.parse(event.content))
            } catch (err) {
              lane.fail(
                err instanceof PairError
                  ? err
                  : new PairError('out-of-order', 'unreadable pairing event'),
              )
              return
            }
            lane.deliver(m)
          },
          onEose: () => {
            subscribed = true
            resolve(lane)
          },
          onClosed: (err, said) => {
            const e =
              err.reason === 'refused' && said !== undefined
                ? laneError(said)
                : new PairError('interrupted', 'the connection to the hub closed')
            lane.fail(e)
            if (!subscribed) reject(e)
          },
        },
        'pair',
      )
    })
  }

  private deliver(m: PairMessage): void {
    if (this.failure) return
    if (this.waiter) {
      const w = this.waiter
      this.waiter = undefined
      w.resolve(m)
    } else this.inbox.push(m)
  }

  private fail(err: PairError): void {
    if (this.failure) return
    this.failure = err
    this.waiter?.reject(err)
    this.waiter = undefined
  }

  /** Sends one message; rejects with the lane's refusal when the hub does not take it. */
  async send(m: PairMessage, now = Math.floor(Date.now() / 1000)): Promise<void> {
    if (this.failure) throw this.failure
    const event = signEvent(makePairingEvent(this.pid, m, now), this.key)
    let answer
    try {
      answer = await this.client.publish(event)
    } catch (err) {
      // The connection closed or timed out: the pairing cannot go on.
      throw new PairError('interrupted', err instanceof Error ? err.message : String(err))
    }
    if (!answer.ok) throw laneError(answer.message)
  }

  /** The next message from the other side, within `timeoutMs`. */
  next(timeoutMs: number): Promise<PairMessage> {
    if (this.failure) return Promise.reject(this.failure)
    const queued = this.inbox.shift()
    if (queued) return Promise.resolve(queued)
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiter = undefined
        reject(new PairError('timeout'))
      }, timeoutMs)
      this.waiter = {
        resolve: (m) => {
          clearTimeout(timer)
          resolve(m)
        },
        reject: (e) => {
          clearTimeout(timer)
          reject(e)
        },
      }
    })
  }

  /**
   * Tells the other side why (`abort`, authenticated by the handshake once its keys exist; its
   * screen shows the same words), then closes.
   */
  async abort(abort: PairMessage): Promise<void> {
    if (!this.failure && !this.client.closed) {
      // Best effort: the other side learns of the failure from the closed room otherwise.
      await this.send(abort).catch(() => undefined)
    }
    this.close()
  }

  close(): void {
    this.sub?.close()
    this.client.close()
  }
}
