// Which tier each test file runs in (vitest.config.ts turns these into vitest projects). A tier
// is a promise about what its files touch, and test/tiers/guard.ts holds the first two to it:
//   unit       pure and in-process: no sockets, no processes, no build (npm run test:unit)
//   network    real sockets and threads inside the test's own process: hubs on 127.0.0.1:0,
//              relay clients, the verify pool; no processes, no build (with unit: test:fast)
//   processes  real subprocesses: `kith` itself (the built dist), `kith hub`, ACP agents
//   browser    Debian's Chromium driving the built web app
// Every test file is in exactly one tier: vitest.config.ts refuses to start otherwise, so a new
// file cannot fall out of `npm run check`.

export type Tier = 'unit' | 'network' | 'processes' | 'browser'

export const tiers: Record<Tier, string[]> = {
  unit: [
    'test/events/*.test.ts',
    'test/identity/*.test.ts',
    'test/store/*.test.ts',
    'test/grants/{channel-authority,channels,e2e-keyring,e2e-sealing,hub-role,issuer,nip-oa,policy,verifier}.test.ts',
    'test/pairing/{aborts,mitm,protocol,vectors}.test.ts',
    'test/verify/{choose,native}.test.ts',
    'test/cli/{chat-input,review-lines,terminal-text,transcript}.test.ts',
    'test/acp/{auth-required,policy,reply-text,secret-paths}.test.ts',
    'test/node/{agent-bridge,names,nip44-native,presence,session-threads}.test.ts',
    'test/web/sw-seal.test.ts',
    'test/tiers/unit-guard.test.ts',
  ],
  network: [
    'test/grants/{hub-agrees,hub-revocation,member-attacks}.test.ts',
    'test/hub/{admission,adversaries,auth,auth-flood,channel-attacks,limits,negentropy,pairing-lane,private-channels,semantics,slow-reader}.test.ts',
    'test/link/*.test.ts',
    'test/node/{channel-outbox,channel-sync,control,e2e-convergence,intake,outbox-pump}.test.ts',
    'test/verify/pool.test.ts',
    'test/tiers/network-guard.test.ts',
  ],
  processes: [
    'test/layers.test.ts',
    'test/acp/{host,host-features}.test.ts',
    'test/cli/{agent-cli,chat-who,cli,declare-cli,hub-peer-cli,rough-edges}.test.ts',
    'test/e2e/*.test.ts',
    'test/hub/{db-integrity,process}.test.ts',
    'test/node/stop.test.ts',
    'test/notify/*.test.ts',
    'test/pairing/relay-lane.test.ts',
    'test/web/serve.test.ts',
  ],
  browser: ['test/web/{app,e2e-web,push,shell}.test.ts'],
}
