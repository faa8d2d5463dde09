import WebSocket from 'ws'
import { KithError } from '../errors.js'
import type { NostrEvent } from '../events/event.js'
import { withoutConnectTicket } from '../events/connect-ticket.js'
import { authenticate } from './authenticate.js'
import { RelayClient, type OkAnswer } from './relay-client.js'

export type { OkAnswer } from './relay-client.js'

/** Largest frame a one-off call takes from a hub (a page of grants and definitions). */
const maxCallFrameBytes = 4 * 1024 * 1024

/**
 * Half the relay client's `defaultRelayTimeoutMs`, on purpose: a one-off call has a person
 * (or a node's sync, which retries) waiting on each answer, where a node's long-lived link rides
 * out a hub under load.
 */
export const hubCallTimeoutMs = 5000

/**
 * One short-lived connection to a hub for one-off work (publish, authenticate, query): CLI
 * commands, and the node's grant and definition syncs (node/fleet.ts, node/channel-sync.ts),
 * over the shared relay client: every request has a timeout, and a closed connection rejects every
 * pending request.
 */
export class HubCall {
  private constructor(
    private readonly client: RelayClient,
    private readonly timeoutMs: number,
  ) {}

  get url(): string {
    return this.client.url
  }

  /** `target` may carry a connect ticket (withConnectTicket); AUTH and messages name the bare URL. */
  static async open(target: string, opts: { timeoutMs?: number } = {}): Promise<HubCall> {
    const timeoutMs = opts.timeoutMs ?? hubCallTimeoutMs
    const url = withoutConnectTicket(target)
    const ws = new WebSocket(target, {
      handshakeTimeout: timeoutMs,
      maxPayload: maxCallFrameBytes,
    })
    // A failed handshake is reported through connect's rejection; this keeps it from being an
    // unhandled 'error' event on the socket.
    ws.on('error', () => undefined)
    try {
      return new HubCall(await RelayClient.connect(ws, { url, timeoutMs }), timeoutMs)
    } catch (err) {
      if (!(err instanceof KithError)) throw err
      throw new KithError(
        'io',
        `cannot reach hub ${url}: ${err.message.replace(/^cannot reach [^:]+: /, '')}`,
        {
          cause: err,
          reason: 'closed',
        },
      )
    }
  }

  publish(event: NostrEvent): Promise<OkAnswer> {
    return this.client.publish(event)
  }

  /**
   * Authenticates as `secretKey` (NIP-42, authenticate.ts: the caller publishes the chain first);
   * throws when the hub sends no challenge.
   */
  async auth(secretKey: Uint8Array): Promise<OkAnswer> {
    const result = await authenticate(this.client, {
      secret: secretKey,
      challengeWaitMs: this.timeoutMs,
    })
    if (result.code === 'no-challenge') {
      throw new KithError('io', `hub ${this.url} sent no AUTH challenge: is it a Kith hub?`, {
        reason: 'timeout',
      })
    }
    return { ok: result.code === 'ok', message: result.message }
  }

  query(...filters: Record<string, unknown>[]): Promise<NostrEvent[]> {
    return this.client.query(filters)
  }

  close(): void {
    this.client.close()
  }
}
