/**
 * A relay-to-client NIP-01 frame as [verb, ...args], or undefined for anything that is not a JSON
 * array with a string verb. Clients ignore such frames rather than trust them.
 */
export function parseRelayFrame(text: string): [string, unknown, unknown, unknown] | undefined {
  let msg: unknown
  try {
    msg = JSON.parse(text)
  } catch {
    // Not JSON: the caller skips the frame.
    return undefined
  }
  if (!Array.isArray(msg) || typeof msg[0] !== 'string') return undefined
  const [verb, a, b, c] = msg as unknown[]
  return [verb as string, a, b, c]
}
