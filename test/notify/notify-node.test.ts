import { createVerify } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { makeChatMessage } from '../../src/events/chat.js'
import { signEvent, type NostrEvent } from '../../src/events/event.js'
import { Kind } from '../../src/events/kinds.js'
import {
  makePushSubscription,
  parsePushPayload,
  parsePushSender,
  type PushPayload,
} from '../../src/events/push.js'
import { HubCall } from '../../src/link/hub-call.js'
import { laptopAndDevbox, runKith, setupKith, startNodeProcess } from '../helpers/cli.js'
import { ask, threadedUnder } from '../helpers/node-chat.js'
import { startEndpoint, testCertPath, testSubscription } from '../helpers/push-service.js'
import { newKey, remember, signTestGrant } from '../helpers/secrets.js'
import { tempDir } from '../helpers/tmp.js'

const fakeAgent = fileURLToPath(new URL('../fixtures/fake-agent.mjs', import.meta.url))
const now = () => Math.floor(Date.now() / 1000)

/** Publishes `events` to the hub as `secret` (grants first, then AUTH, then the rest). */
async function publishAs(
  url: string,
  secret: Uint8Array,
  grants: NostrEvent[],
  events: NostrEvent[],
) {
  const s = await HubCall.open(url)
  try {
    for (const g of grants) await s.publish(g)
    const auth = await s.auth(secret)
    expect(auth.ok, auth.message).toBe(true)
    for (const e of events) {
      const ok = await s.publish(e)
      expect(ok.ok, ok.message).toBe(true)
    }
  } finally {
    s.close()
  }
}

/** The VAPID JWT of a push request: its claims, checked against the sender's key (ES256). */
function vapidClaims(authorization: string | undefined, vapidKey: string): Record<string, unknown> {
  const m = /^vapid t=([^,]+), k=(.+)$/.exec(authorization ?? '')
  expect(m, `Authorization: ${authorization}`).not.toBeNull()
  const [, jwt, k] = m!
  expect(k).toBe(vapidKey)
  const [header, claims, signature] = jwt!.split('.')
  const pub = Buffer.from(vapidKey, 'base64url')
  const key = {
    kty: 'EC',
    crv: 'P-256',
    x: pub.subarray(1, 33).toString('base64url'),
    y: pub.subarray(33, 65).toString('base64url'),
  }
  const ok = createVerify('SHA256')
    .update(`${header}.${claims}`)
    .verify({ key, format: 'jwk', dsaEncoding: 'ieee-p1363' }, Buffer.from(signature!, 'base64url'))
  expect(ok).toBe(true)
  return JSON.parse(Buffer.from(claims!, 'base64url').toString()) as Record<string, unknown>
}

describe(
  'notifications from a node (kith-notify/1, real processes and endpoints)',
  { timeout: 240_000 },
  () => {
    it('pushes cards to the person’s web device (RFC 8291), ntfy and webhooks; withdraws answered cards; never twice; ignores another person’s device', async () => {
      const { hub, laptop, devbox, ownerSk } = await laptopAndDevbox(tempDir())
      const owner = remember(ownerSk)
      // Full texts to third-party targets are what this test is about: a plain fleet (a sealed
      // one sends them the brief unless asked, which test/notify covers elsewhere). Without
      // this, the founder's node would seal the fleet once caught up (kith-e2e/1).
      expect((await runKith(['fleet', 'encrypt', 'off'], { home: laptop })).code).toBe(0)
      expect(
        (
          await setupKith(['agent', 'add', 'claude', '--', process.execPath, fakeAgent], {
            home: devbox,
          })
        ).code,
      ).toBe(0)

      // The endpoints: a push service (https, the test certificate), ntfy, a webhook, a refusing one.
      const push = await startEndpoint({ tls: true })
      const ntfy = await startEndpoint({ answer: () => 200 })
      const hook = await startEndpoint({ answer: () => 200 })
      const refusing = await startEndpoint({ answer: () => 403 })
      const stranger = await startEndpoint({ tls: true })
      const add = async (...args: string[]) => {
        const r = await setupKith(['notify', 'add', ...args, '--json'], { home: laptop })
        expect(r.code, r.stderr).toBe(0)
        return (JSON.parse(r.stdout) as { added: { id: string } }).added.id
      }
      await add('ntfy', `${ntfy.url}/kith-alerts`, '--on', 'cards', '--open', 'https://app.example')
      await add('webhook', `${hook.url}/hook`, '--on', 'cards,mentions')
      const refusingId = await add('webhook', `${refusing.url}/nope`, '--on', 'cards')
      // Bad input is refused with the reason.
      const bad = await setupKith(['notify', 'add', 'webhook', 'ftp://x', '--on', 'cards'], {
        home: laptop,
      })
      expect(bad.code).toBe(2)
      expect(bad.stderr).toMatch(/http\(s\) URL/)
      expect(
        (
          await setupKith(['notify', 'add', 'ntfy', `${ntfy.url}/t`, '--on', 'cardz'], {
            home: laptop,
          })
        ).stderr,
      ).toMatch(/unknown class cardz/)
      const desktopFull = await setupKith(['notify', 'add', 'desktop', '--full-text'], {
        home: laptop,
      })
      expect(desktopFull.code).toBe(2)
      expect(desktopFull.stderr).toMatch(/--full-text is for ntfy and webhook targets/)

      const env = { NODE_EXTRA_CA_CERTS: testCertPath }
      let nl = await startNodeProcess(laptop, ['--web-port', '0', '--port', '0'], env)
      const nd = await startNodeProcess(devbox, ['--no-web', '--port', '0'])
      await nl.waitFor(/linked to/)
      await nd.waitFor(/linked to/)
      const laptopDevice = (
        JSON.parse((await runKith(['whoami', '--json'], { home: laptop })).stdout) as {
          deviceHex: string
        }
      ).deviceHex

      // The laptop announces itself as a push sender with its VAPID key (public).
      let senderEvent: NostrEvent | undefined
      const reader = await HubCall.open(hub.url)
      await reader.auth(ownerSk)
      await expect
        .poll(
          async () => {
            senderEvent = (
              await reader.query({ kinds: [Kind.PushSender], authors: [laptopDevice] })
            )[0]
            return senderEvent !== undefined
          },
          { timeout: 20_000 },
        )
        .toBe(true)
      reader.close()
      const vapid = parsePushSender(senderEvent!).vapid

      // A web device of the same person subscribes through the laptop, sealed to it.
      const web = newKey()
      const webGrant = signTestGrant(
        { subject: web.pk, role: 'device', fleet: owner, name: 'phone' },
        ownerSk,
        now(),
      )
      const sub = testSubscription(`${push.url}/push/phone-1`)
      const subEvent = signEvent(
        makePushSubscription(
          { subscription: sub.subscription, classes: ['cards', 'mentions'], finishedAfter: 120 },
          web.sk,
          laptopDevice,
          now(),
        ),
        web.sk,
      )
      // Nothing of the subscription is readable on the hub: not the endpoint, not its keys.
      expect(subEvent.content).not.toContain('phone-1')
      expect(subEvent.content).not.toContain(sub.subscription.keys.auth)
      await publishAs(hub.url, web.sk, [webGrant], [subEvent])
      await nl.waitFor(/phone receives cards, mentions by Web Push/)

      // Another person (admitted by the founder) tries to have the laptop push alice's cards to them.
      const bobOwner = newKey()
      const bobGrant = signTestGrant(
        { subject: bobOwner.pk, role: 'owner', fleet: owner, name: 'bob', deleg: true },
        ownerSk,
        now(),
      )
      const bobDevice = newKey()
      const bobDeviceGrant = signTestGrant(
        {
          subject: bobDevice.pk,
          role: 'device',
          fleet: owner,
          name: 'bob-phone',
          parent: bobGrant.id,
        },
        bobOwner.sk,
        now(),
      )
      const bobSub = testSubscription(`${stranger.url}/push/bob`)
      // Bob's phone asks Alice's laptop to push Alice's cards to it: the hub refuses it at
      // admission (push.subscription is the owner's only), so no node ever takes it.
      const bobCall = await HubCall.open(hub.url)
      try {
        for (const g of [bobGrant, bobDeviceGrant]) await bobCall.publish(g)
        expect((await bobCall.auth(bobDevice.sk)).ok).toBe(true)
        const refused = await bobCall.publish(
          signEvent(
            makePushSubscription(
              { subscription: bobSub.subscription, classes: ['cards'], finishedAfter: 0 },
              bobDevice.sk,
              laptopDevice,
              now(),
            ),
            bobDevice.sk,
          ),
        )
        expect(refused.ok).toBe(false)
        expect(refused.message).toMatch(/^restricted: not-owner/)
      } finally {
        bobCall.close()
      }

      // A card: the agent on the devbox asks; the laptop pushes it to the phone, ntfy and the webhook.
      const q = await ask(laptop, '@claude permission rm -rf build')
      const card = (await threadedUnder(laptop, q, { kind: Kind.PermissionRequest }))[0]!.event
      const first = await push.nth(0)
      expect(first.path).toBe('/push/phone-1')
      expect(first.headers['content-encoding']).toBe('aes128gcm')
      expect(first.headers.urgency).toBe('high')
      const claims = vapidClaims(first.headers.authorization, vapid)
      expect(claims.aud).toBe(push.url)
      // The push service sees ciphertext only; the phone's keys open it (RFC 8291).
      expect(first.body.toString('latin1')).not.toContain('rm -rf')
      const payload = parsePushPayload(sub.open(first.body))
      expect(payload).toMatchObject({
        type: 'notify',
        class: 'cards',
        tag: card.id,
        title: 'claude asks: rm -rf build',
        open: `#/c/ops/t/${q}`,
        card: {
          id: card.id,
          channel: 'ops',
          agent: card.pubkey,
          fleet: owner,
          allow: 'allow',
          reject: 'reject',
        },
      })
      const ntfyBody = JSON.parse((await ntfy.nth(0)).body.toString()) as Record<string, unknown>
      expect(ntfyBody).toMatchObject({
        topic: 'kith-alerts',
        title: 'claude asks: rm -rf build',
        priority: 4,
        click: `https://app.example/#/c/ops/t/${q}`,
      })
      expect((await ntfy.nth(0)).path).toBe('/')
      const hookBody = JSON.parse((await hook.nth(0)).body.toString()) as Record<string, unknown>
      expect(hookBody).toMatchObject({
        kith: 'notify/1',
        class: 'cards',
        event: card.id,
        channel: 'ops',
      })
      expect(hookBody.link).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:\\d+/#/c/ops/t/${q}$`))
      // The refusing endpoint is shown in kith status with what it said, and not retried.
      await refusing.nth(0)
      await expect
        .poll(async () => (await runKith(['status'], { home: laptop })).stdout, { timeout: 10_000 })
        .toMatch(
          new RegExp(
            `notify  ${refusingId} webhook → .*: 1 failed, 0 sent — last error: the webhook answered 403: refused by the test`,
          ),
        )

      // Answered from the devbox: the phone's notification is withdrawn.
      expect((await runKith(['permit', card.id, 'allow'], { home: devbox })).code).toBe(0)
      const withdraw = parsePushPayload(sub.open((await push.nth(1)).body))
      expect(withdraw).toEqual({ type: 'withdraw', tag: card.id } satisfies PushPayload)
      expect((await threadedUnder(laptop, q, { kind: 9 }))[0]!.event.content).toBe(
        'permission: selected allow',
      )

      // A restart sends nothing twice: the next push is the next card, not the first again.
      await nl.stop()
      nl = await startNodeProcess(laptop, ['--web-port', '0', '--port', '0'], env)
      await nl.waitFor(/linked to/)
      const q2 = await ask(laptop, '@claude permission deploy')
      const card2 = (await threadedUnder(laptop, q2, { kind: Kind.PermissionRequest }))[0]!.event
      const second = parsePushPayload(sub.open((await push.nth(2)).body))
      expect(second).toMatchObject({ type: 'notify', tag: card2.id })
      expect((await runKith(['permit', card2.id, 'reject'], { home: laptop })).code).toBe(0)
      expect(parsePushPayload(sub.open((await push.nth(3)).body))).toEqual({
        type: 'withdraw',
        tag: card2.id,
      })

      // Bob mentions alice (her owner key): a mention for the phone and the webhook. Then five at
      // once: one summary each, not five.
      const mention = (text: string, at: number) =>
        signEvent(
          makeChatMessage({ channel: 'ops', text, fleet: owner, mentions: [owner] }, at),
          bobDevice.sk,
        )
      await publishAs(hub.url, bobDevice.sk, [], [mention('@alice can you look?', now())])
      const m1 = parsePushPayload(sub.open((await push.nth(4)).body))
      expect(m1).toMatchObject({
        type: 'notify',
        class: 'mentions',
        title: 'bob-phone in #ops',
        body: '@alice can you look?',
      })
      await publishAs(
        hub.url,
        bobDevice.sk,
        [],
        [1, 2, 3, 4, 5].map((i) => mention(`ping ${i}`, now() + i)),
      )
      const summary = parsePushPayload(sub.open((await push.nth(5)).body))
      expect(summary).toMatchObject({
        type: 'notify',
        class: 'summary',
        title: '5 notifications',
        body: '5 mentions',
      })
      const hookSummary = JSON.parse((await hook.nth(3)).body.toString()) as Record<string, unknown>
      expect(hookSummary).toMatchObject({ class: 'summary', title: '5 notifications' })

      // Nothing ever went to bob's endpoint.
      expect(stranger.received).toEqual([])
      const status = JSON.parse(
        (await runKith(['notify', 'list', '--json'], { home: laptop })).stdout,
      ) as {
        targets: { id: string; type: string; where: string; sent: number; failed: number }[]
      }
      const phone = status.targets.find((t) => t.type === 'webpush')!
      expect(phone.where).toBe(`${push.url} (Web Push)`)
      expect(phone.sent).toBeGreaterThanOrEqual(5)
      expect(phone.failed).toBe(0)
    })
  },
)
