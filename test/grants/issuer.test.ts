import { describe, expect, it } from 'vitest'
import type { Grant } from '../../src/grants/grant.js'
import { chooseIssuer, parentGrant } from '../../src/grants/issuer.js'

const founder = 'f'.repeat(64)
const owner = 'a'.repeat(64)
const device = 'd'.repeat(64)

function grant(id: string, subject: string, deleg: boolean): Grant {
  return {
    id,
    issuer: founder,
    subject,
    role: subject === owner ? 'owner' : 'device',
    fleet: founder,
    deleg,
    proof: '',
    createdAt: 0,
  }
}

describe('chooseIssuer', () => {
  it('prefers the owner key: the founder with no parent, another owner under its grant', () => {
    const current = (k: string) => (k === owner ? grant('g-owner', owner, true) : undefined)
    expect(chooseIssuer({ owner: founder, device }, founder, current)).toEqual({
      by: 'owner',
      issuer: founder,
      parent: undefined,
      chained: true,
    })
    expect(chooseIssuer({ owner, device }, founder, current)).toEqual({
      by: 'owner',
      issuer: owner,
      parent: 'g-owner',
      chained: true,
    })
    // An owner key with no grant in effect issues nothing that would chain.
    expect(chooseIssuer({ owner }, founder, () => undefined).chained).toBe(false)
  })

  it('without the owner key, the device issues only with deleg', () => {
    const withDeleg = (k: string) => (k === device ? grant('g-dev', device, true) : undefined)
    expect(chooseIssuer({ device }, founder, withDeleg)).toEqual({
      by: 'device',
      issuer: device,
      parent: 'g-dev',
      chained: true,
    })
    const noDeleg = (k: string) => (k === device ? grant('g-dev', device, false) : undefined)
    expect(() => chooseIssuer({ device }, founder, noDeleg)).toThrow(
      expect.objectContaining({ code: 'restricted', reason: 'no-authority' }),
    )
    expect(() => chooseIssuer({ device }, founder, () => undefined)).toThrow(
      expect.objectContaining({ code: 'restricted', reason: 'no-authority' }),
    )
  })

  it('parentGrant: none for the founder, else the current grant', () => {
    const g = grant('g-owner', owner, true)
    expect(parentGrant(founder, founder, () => g)).toBeUndefined()
    expect(parentGrant(owner, founder, () => g)).toBe(g)
  })
})
