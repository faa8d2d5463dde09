import * as acp from '@agentclientprotocol/sdk'
import { describe, expect, it } from 'vitest'
import { authRequired, errorDetail } from '../../src/acp/agent-process.js'

describe('the one-line notice for ACP -32000', () => {
  it('says authentication is required without repeating the bare message', () => {
    expect(authRequired(acp.RequestError.authRequired(), '')).toBe('authentication required')
    expect(authRequired(new acp.RequestError(-32000, 'Authentication required.'), '')).toBe(
      'authentication required',
    )
  })

  it("carries the agent's own words: its message, its data, its login methods, on one line", () => {
    const err = new acp.RequestError(-32000, 'Not logged in', {
      message: 'run `opencode auth login`\nin a terminal',
    })
    expect(
      authRequired(err, 'Login with opencode: Run `opencode auth login` in the terminal'),
    ).toBe(
      'authentication required (Not logged in; run `opencode auth login` in a terminal; ' +
        'to log in: Login with opencode: Run `opencode auth login` in the terminal)',
    )
    expect(
      authRequired(new acp.RequestError(-32000, 'Authentication required', 'use a key'), ''),
    ).toBe('authentication required (use a key)')
  })
})

describe("an agent's error in words", () => {
  it('takes the explanation from data (string, details or message)', () => {
    expect(errorDetail(new acp.RequestError(-32603, 'Internal error', 'disk full'))).toBe(
      'disk full',
    )
    expect(
      errorDetail(
        new acp.RequestError(-32603, 'Internal error', {
          details: 'No previous sessions found for this project.',
        }),
      ),
    ).toBe('No previous sessions found for this project.')
    expect(errorDetail(new acp.RequestError(-32603, 'Internal error', { message: 'm' }))).toBe('m')
    expect(errorDetail(new acp.RequestError(-32603, 'Internal error'))).toBe('')
  })
})
