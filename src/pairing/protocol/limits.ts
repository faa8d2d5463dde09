/**
 * kith-pair/1 sizes, each declared once with its reason. The hub's pairing lane (kith-hub,
 * src/hub/pairing-lane.ts) takes frames of at most 4,096 bytes and 16 events per connection.
 */

/**
 * The enrollment (CONFIRM_I) travels in parts of at most this many UTF-8 bytes of plaintext, so
 * each kind-24140 event stays well under the lane's 4,096-byte frame: with its `k/n` header a
 * part pads to at most 1,792 bytes in NIP-44 v2, 2,480 in base64, about 2,950 as a signed event.
 */
export const enrollmentPartBytes = 1536

/**
 * At most this many parts (18 KiB): the inviter also sends NONCE and perhaps an abort, within the
 * lane's 16 events per connection. A chain is at most 6 grants deep, so real enrollments take 1–4.
 */
export const maxEnrollmentParts = 12

/** An abort's `detail` (a hub's refusal text, say) is cut to this many characters. */
export const maxAbortDetailChars = 300

/** The name a joiner proposes for itself is cut to this many characters. */
export const maxProposedNameChars = 64
