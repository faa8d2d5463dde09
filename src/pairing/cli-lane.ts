import WebSocket from 'ws'
import { generateSecretKey } from 'nostr-tools/pure'
import { signEvent } from '../events/event.js'
import { makePairingEvent, pairingLaneFilter } from '../events/pairing.js'
import { defaultRelayTimeoutMs, RelayClient, type Subscription } from '../link/relay-client.js'
import { PairError } from './protocol/errors.js'
import { parsePairMessage, type PairMessage } from './protocol/handshake.js'
import { laneError } from './relay-lane.js'

/** How long a last abort may wait for the hub's OK before the connection is closed anyway. */
const abortFlushMs = 2_000
/** The lane's frames are small (kith-pair); a hub that sends more is not one. */
const maxLaneFrameBytes = 64 * 1024

/**
 * One side's connection to a hub's pairing lane, for the CLI (Node's `ws`): kind-24140 events in
 * room `pid`, each signed by a throwaway key made for this pairing (the ephemeral ECDH key must
 * stay hidden until REVEAL), over the one NIP-01 client (`link/relay-client.ts`). Messages from
 * the other party go to the listener in order (those that came before it was set are queued); a
 * refusal, a burn or a disconnect goes, once, to the failure listener.
 */
export class CliPairingLane {
  private readonly key = generateSecretKey()
  private readonly queued: PairMessage[] = []
  private onMessage: ((m: PairMessage) => void) | undefined
  private onFailure: ((e: PairError) => void) | undefined
  private failure: PairError | undefined
  /** The failure came from this side (Ctrl-C, a timeout): the connection still works. */
  private stoppedHere = false
  private sub: Subscription | undefined

  private constructor(
    private readonly client: RelayClient,
    readonly pid: string,
  ) {}

  static async open(
    url: string,
    pid: string,
    timeoutMs = defaultRelayTimeoutMs,
  ): Promise<CliPairingLane> {
    const ws = new WebSocket(url, { handshakeTimeout: timeoutMs, maxPayload: maxLaneFrameBytes })
    let client: RelayClient
    try {
      // A close later reaches the lane subscription's onClosed: the exchange fails there.
      client = await RelayClient.connect(ws, { url, timeoutMs })
    } catch (err) {
      throw new PairError(
        'interrupted',
        `cannot reach the hub ${url}: ${err instanceof Error ? err.message : String(err)}`,
      )
    }
    const opened = new CliPairingLane(client, pid)
    try {
      await new Promise<void>((resolve, reject) => {
        let subscribed = false
        opened.sub = client.subscribe(
          [pairingLaneFilter(pid)],
          {
            onEvent: (event) => opened.onEvent(event.content),
            onEose: () => {
              subscribed = true
              resolve()
            },
            onClosed: (err, said) => {
              const e =
                err.reason === 'refused' && said !== undefined
                  ? laneError(said)
                  : new PairError('interrupted', 'the connection to the hub closed')
              opened.fail(e)
              if (!subscribed) reject(e)
            },
          },
          'pair',
        )
      })
    } catch (err) {
      // Refused (used, burnt or expired room): nothing more to say on this connection.
      client.close()
      throw err
    }
    return opened
  }

  /** Delivers every message from the other side to `onMessage`, and the first failure to `onFailure`. */
  listen(onMessage: (m: PairMessage) => void, onFailure: (e: PairError) => void): void {
    this.onMessage = onMessage
    this.onFailure = onFailure
    for (const m of this.queued.splice(0)) onMessage(m)
    if (this.failure) onFailure(this.failure)
  }

  /** Stops the exchange from this side (Ctrl-C, a timeout): every wait fails with `err`. */
  interrupt(err: PairError): void {
    if (this.failure) return
    this.stoppedHere = true
    this.fail(err)
  }

  private fail(err: PairError): void {
    if (this.failure) return
    this.failure = err
    this.onFailure?.(err)
  }

  private onEvent(content: string): void {
    let m: PairMessage
    try {
      m = parsePairMessage(JSON.parse(content))
    } catch (err) {
      // Anyone who knows the room id can post junk into it: a stop, never a security verdict.
      this.fail(
        err instanceof PairError ? err : new PairError('out-of-order', 'unreadable pairing event'),
      )
      return
    }
    if (this.failure) return
    if (this.onMessage) this.onMessage(m)
    else this.queued.push(m)
  }

  /** Sends one message; resolves on the hub's OK, rejects with its refusal (its words kept). */
  async send(m: PairMessage): Promise<void> {
    if (this.failure) throw this.failure
    return this.post(m)
  }

  private async post(m: PairMessage): Promise<void> {
    const event = signEvent(makePairingEvent(this.pid, m, Math.floor(Date.now() / 1000)), this.key)
    let answer
    try {
      answer = await this.client.publish(event)
    } catch (err) {
      // Closed or timed out: the exchange cannot go on, whichever side is waiting.
      const e =
        this.failure ??
        new PairError('interrupted', err instanceof Error ? err.message : String(err))
      this.fail(e)
      throw e
    }
    if (!answer.ok) throw laneError(answer.message)
  }

  /**
   * Best effort: tells the other side why (an `abort` the handshake made, authenticated when it
   * can be), waiting briefly for the hub to take it, then closes.
   */
  async abort(m: PairMessage): Promise<void> {
    if (!this.client.closed && (this.failure === undefined || this.stoppedHere)) {
      let timer: ReturnType<typeof setTimeout> | undefined
      await Promise.race([
        this.post(m),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, abortFlushMs)
        }),
      ]).catch(() => undefined) // The hub refused even the abort: closing says the rest.
      clearTimeout(timer)
    }
    this.close()
  }

  close(): void {
    this.sub?.close()
    this.client.close()
  }
}
