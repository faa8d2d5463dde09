import type { HubLimits } from './limits.js'
import { maxRevocationTargets } from '../grants/revocation.js'
import { freeIndexedTags, indexedTagsPerToken } from './event-limits.js'
import { heldTargetsPerSigner } from '../grants/verifier.js'
import { quotaExemptKinds } from '../store/hub-schema.js'

export const supportedNips = [1, 11, 42, 77] as const

const seconds = (ms: number) => ms / 1000

/** The NIP-11 relay information document, limits included. */
export function relayInformation(opts: { limits: HubLimits; owner?: string; version: string }) {
  const { limits } = opts
  return {
    name: 'kith hub',
    description: 'A Kith fleet hub: members authenticate with NIP-42; events are signed NIP-01.',
    ...(opts.owner === undefined ? {} : { pubkey: opts.owner }),
    software: 'kith',
    version: opts.version,
    supported_nips: [...supportedNips],
    limitation: {
      max_message_length: limits.maxFrameBytes,
      max_subscriptions: limits.maxSubscriptions,
      max_filters: limits.maxFilters,
      max_limit: limits.maxLimit,
      default_limit: limits.defaultLimit,
      max_subid_length: limits.maxSubIdLength,
      max_event_tags: limits.maxTags,
      max_content_length: limits.maxContentBytes,
      created_at_upper_limit: limits.maxFutureSeconds,
      auth_required: true,
      restricted_writes: true,
      payment_required: false,
    },
    kith: {
      events_per_second_per_person: limits.eventsPerSecond,
      event_burst_per_person: limits.eventBurst,
      events_per_second_per_hub: limits.eventsPerSecond <= 0 ? 0 : limits.hubEventsPerSecond,
      event_burst_per_hub: limits.hubEventBurst,
      quota_events_per_person: limits.quotaEvents,
      quota_bytes_per_person: limits.quotaBytes,
      quota_exempt_kinds: [...quotaExemptKinds],
      held_revocation_targets_per_signer: heldTargetsPerSigner,
      revocation_targets_max: maxRevocationTargets,
      free_indexed_tags_per_event: freeIndexedTags,
      indexed_tags_per_event_token: indexedTagsPerToken,
      max_filter_values: limits.maxFilterValues,
      max_filter_tag_conditions: limits.maxFilterTagConditions,
      max_filter_tag_value_length: limits.maxFilterTagValueLength,
      max_tag_item_length: limits.maxTagItemLength,
      hard_frame_bytes: limits.hardFrameBytes,
      max_unread_bytes: limits.maxUnreadBytes,
      negentropy_max_items: limits.negMaxItems,
      negentropy_slice_items: limits.negSliceItems,
      negentropy_slice_ms: limits.negSliceMs,
      negentropy_max_sessions: limits.negMaxOpen,
      negentropy_max_sessions_per_person: limits.negMaxOpenPerPerson,
      max_connections_per_person: limits.maxConnectionsPerPerson,
      slow_reader_seconds: seconds(limits.slowReaderMs),
      req_work_ms_per_second_per_person: limits.reqWorkMsPerSecond,
      req_slice_ms: limits.reqSliceMs,
      req_work_burst_ms_per_person: limits.reqWorkBurstMs,
      req_work_lend_after_quiet_ms: limits.reqWorkLendAfterQuietMs,
      max_auth_attempts: limits.maxAuthAttempts,
      max_pending_verifications: limits.maxPendingVerifications,
      auth_deadline_seconds: seconds(limits.authDeadlineMs),
      max_unauthenticated_per_address: limits.maxUnauthenticatedPerAddress,
      max_unauthenticated: limits.maxUnauthenticated,
      connections_per_second_per_address: limits.connectionsPerSecondPerAddress,
      connection_burst_per_address: limits.connectionBurstPerAddress,
      connection_rate_addresses: limits.connectionRateAddresses,
      over_rate_answer_delay_ms: limits.overRateAnswerDelayMs,
      max_pairing_rooms_per_address: limits.maxPairingRoomsPerAddress,
    },
  }
}
