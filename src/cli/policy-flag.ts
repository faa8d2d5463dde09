import { KithError } from '../errors.js'
import { GrantError } from '../grants/grant.js'
import { parsePolicy, type AgentPolicy } from '../grants/policy.js'
import { parsePubkeyText } from './key-text.js'

/**
 * `--allow` / `--approvers`: `owner`, `fleet`, or a comma-separated list of npubs (people, whose
 * devices are covered, or single device or agent keys). The agent's owner is always included.
 */
export function parsePolicyFlag(text: string | undefined, flag: string): AgentPolicy | undefined {
  if (text === undefined) return undefined
  const trimmed = text.trim()
  if (trimmed === 'owner' || trimmed === 'fleet') return trimmed
  const keys = trimmed
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '')
  if (keys.length === 0) throw new KithError('usage', `${flag} is owner, fleet or npub1…,npub1…`)
  try {
    return parsePolicy(
      keys.map((k) => parsePubkeyText(k, `${flag} key`)),
      flag,
    )
  } catch (err) {
    if (err instanceof GrantError) throw new KithError('usage', err.message, { cause: err })
    throw err
  }
}
