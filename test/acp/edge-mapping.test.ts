import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import type * as Acp from '@agentclientprotocol/sdk'
import {
  acpSettingsOf,
  choiceOf,
  permissionParams,
  promptText,
  setRequestOf,
  stopReasonOf,
  uncarriedContent,
  uncarriedRefusal,
  unstreamedRest,
} from '../../src/acp/edge-mapping.js'
import { verifyEventSignature, type NostrEvent } from '../../src/events/event.js'
import { parsePermissionRequest } from '../../src/events/permission-request.js'
import { parseSessionState } from '../../src/events/session-state.js'

interface Vectors {
  promptText: { blocks: Acp.ContentBlock[]; text: string }[]
  unstreamed: { streamed: string; reply: string; rest: string }[]
  uncarried: { blocks: Acp.ContentBlock[]; uncarried: string[]; refusal: unknown }[]
  stopReason: { tags: string[][]; stopReason: string }[]
  permission: { card: NostrEvent; sessionId: string; request: unknown }[]
  settings: { state: NostrEvent; acp: unknown }[]
  setConfigOption: { configId: string; value: string; request: unknown }[]
}
const v = JSON.parse(
  readFileSync(new URL('../vectors/acp-edge.json', import.meta.url), 'utf8'),
) as Vectors

describe('kith acp maps ACP and Kith events as test/vectors/acp-edge.json says', () => {
  it('an editor prompt becomes the text of the kind-9 prompt (images carry nothing)', () => {
    for (const c of v.promptText) expect(promptText(c.blocks)).toBe(c.text)
  })
  it('images, audio and binary resources are named as uncarried, and the prompt refused with that data', () => {
    expect(v.uncarried.some((c) => c.uncarried.length > 0)).toBe(true)
    for (const c of v.uncarried) {
      expect(uncarriedContent(c.blocks)).toEqual(c.uncarried)
      if (c.uncarried.length > 0) expect(uncarriedRefusal(c.uncarried)).toEqual(c.refusal)
      else expect(c.refusal).toBeNull()
    }
  })
  it('the reply adds only what was not streamed, whatever the whitespace the host laid it out with', () => {
    for (const c of v.unstreamed) expect(unstreamedRest(c.streamed, c.reply)).toBe(c.rest)
  })
  it("the agent reply's outcome becomes the prompt's stop reason", () => {
    for (const c of v.stopReason) expect(stopReasonOf(c)).toBe(c.stopReason)
  })
  it("a signed card becomes the editor's request_permission, its preview shown as the tool call's content", () => {
    expect(v.permission.length).toBeGreaterThan(0)
    for (const c of v.permission) {
      expect(verifyEventSignature(c.card)).toBe(true)
      expect(permissionParams(parsePermissionRequest(c.card), c.sessionId)).toEqual(c.request)
    }
  })
  it("a host's signed session state becomes the modes and config options of session/new", () => {
    for (const c of v.settings) {
      expect(verifyEventSignature(c.state)).toBe(true)
      expect(acpSettingsOf(parseSessionState(c.state))).toEqual(c.acp)
    }
    expect(acpSettingsOf(undefined)).toEqual({})
  })
  it('session/set_config_option becomes the session request (4150) that sets it', () => {
    for (const c of v.setConfigOption)
      expect(setRequestOf(choiceOf(c.configId, c.value))).toEqual(c.request)
  })
})
