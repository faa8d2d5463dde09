// A plain nostr-tools client that authenticates (NIP-42) as soon as the hub's challenge arrives.
import WebSocket from 'ws'
import { Relay, useWebSocketImplementation } from 'nostr-tools/relay'
import { finalizeEvent } from 'nostr-tools/pure'

useWebSocketImplementation(WebSocket)

/** A Relay that tells when the hub's AUTH challenge has arrived, so auth() never races it. */
class ChallengedRelay extends Relay {
  /** @param {string} url */
  constructor(url) {
    super(url)
    /** @type {Promise<void>} */
    this.challenged = new Promise((resolve) => (this.onChallenge = resolve))
  }

  /** @param {MessageEvent} ev */
  _onmessage(ev) {
    super._onmessage(ev)
    if (typeof ev.data === 'string' && ev.data.startsWith('["AUTH"')) this.onChallenge()
  }
}

/**
 * @param {string} url
 * @param {Uint8Array} sk
 * @returns {Promise<Relay>} resolves once AUTH is answered OK true; rejects with the hub's reason
 */
export async function connectAuthed(url, sk) {
  const relay = new ChallengedRelay(url)
  await relay.connect()
  await relay.challenged
  try {
    await relay.auth((tpl) => Promise.resolve(finalizeEvent(tpl, sk)))
  } catch (err) {
    relay.close()
    throw err
  }
  return relay
}
