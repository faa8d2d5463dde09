import { describe, expect, it } from 'vitest'
import { quorumOptions, tally, tallyText, type VoterStanding } from '../../src/grants/quorum.js'

/** Alice with two devices, Bob, Carol; Dan is a member who may not approve. */
const standing: Record<string, VoterStanding> = {
  aliceLaptop: { person: 'alice', approver: true },
  alicePhone: { person: 'alice', approver: true },
  bob: { person: 'bob', approver: true },
  carol: { person: 'carol', approver: true },
  dan: { person: 'dan', approver: false },
  gone: { person: undefined, approver: true },
}
const who = (key: string) => standing[key]!
const allow = (author: string) => ({ author, optionKind: 'allow_once' })
const reject = (author: string) => ({ author, optionKind: 'reject_once' })

describe('quorum tally', () => {
  it('counts people, not devices', () => {
    const t = tally(2, [allow('aliceLaptop'), allow('alicePhone')], who)
    expect(t).toEqual({ n: 2, allowedBy: ['alice'], state: 'waiting' })
    expect(tallyText(t)).toBe('1 of 2 — waiting for another approver')
    expect(tally(2, [allow('aliceLaptop'), allow('alicePhone'), allow('bob')], who)).toEqual({
      n: 2,
      allowedBy: ['alice', 'bob'],
      state: 'allowed',
    })
  })

  it('ignores non-approvers and non-members, and names no option as nothing', () => {
    const t = tally(2, [allow('aliceLaptop'), allow('dan'), allow('gone')], who)
    expect(t.state).toBe('waiting')
    expect(tally(2, [allow('bob'), { author: 'carol', optionKind: undefined }], who).state).toBe(
      'waiting',
    )
    expect(tallyText(tally(3, [allow('bob')], who))).toBe('1 of 3 — waiting for 2 more approvers')
  })

  it("ends at any approver's reject, but not a non-approver's", () => {
    expect(tally(2, [allow('aliceLaptop'), reject('bob'), allow('carol')], who)).toEqual({
      n: 2,
      allowedBy: ['alice'],
      rejectedBy: 'bob',
      state: 'rejected',
    })
    expect(tally(2, [reject('dan'), allow('bob'), allow('carol')], who).state).toBe('allowed')
  })

  it('drops the always options where a once option exists', () => {
    const options = [
      { optionId: 'always', kind: 'allow_always' },
      { optionId: 'once', kind: 'allow_once' },
      { optionId: 'no', kind: 'reject_once' },
      { optionId: 'never', kind: 'reject_always' },
    ]
    expect(quorumOptions(options).map((o) => o.optionId)).toEqual(['once', 'no'])
    // An agent that offers only always keeps it (the card would have nothing to allow with).
    expect(quorumOptions([{ kind: 'allow_always' }, { kind: 'reject_once' }])).toHaveLength(2)
  })
})
