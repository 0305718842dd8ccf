import type { RateLimitSettings } from "../config.ts";

/** API bodies are small JSON objects; anything larger is refused before it is read. */
export const MAX_BODY_BYTES = 64 * 1024;

const MINUTE = 60 * 1000;
const HOUR = 60 * MINUTE;

/**
 * Every rate limit, per fixed window, in the shared rate-limit store:
 * sign-in mail per address and per client address (long codes past the address's budget, per
 * both), failed sign-ins per client address, device-login codes per client, and user
 * codes looked up or decided per signed-in account (10 logins' worth), fixed;
 * the hot paths' budgets, and OAuth's unauthenticated revocation, registration and client
 * metadata document fetches (per client address, and failed ones per document host), from the
 * configuration; refetches of a client document that was valid, per client id, fixed.
 */
export function rateLimits(settings: RateLimitSettings) {
  return {
    signInCodesPerAddress: { limit: 5, windowMs: 15 * MINUTE },
    signInCodesPerIp: { limit: 30, windowMs: 15 * MINUTE },
    signInCodesPerRememberedBrowser: { limit: 5, windowMs: 15 * MINUTE },
    // Long codes for an address past its budget, per client address: its owner's few tries.
    signInLongCodesPerIpAndAddress: { limit: 3, windowMs: 15 * MINUTE },
    // A client address's 30 codes' worth of 5 wrong tries each; failures only.
    signInFailuresPerIp: { limit: 150, windowMs: 15 * MINUTE },
    deviceCodesPerIp: { limit: 30, windowMs: 15 * MINUTE },
    // Agent registrations (each a pending agent and an approval code) per client address: the
    // device login's budget, as each is one.
    agentRegistrationsPerIp: { limit: 30, windowMs: 15 * MINUTE },
    deviceCodeGuessesPerAccount: { limit: 20, windowMs: 15 * MINUTE },
    mintsPerUserKey: { limit: settings.mintsPerMinute, windowMs: MINUTE },
    // A client refreshes once per 5-minute token, a few times at once at most: 120 a minute is
    // ten busy clients' worth, and bounds what one account's grants can make the service write.
    refreshesPerAccount: { limit: 120, windowMs: MINUTE },
    failedVerifiesPerPartnerKey: { limit: settings.failedVerifiesPerMinute, windowMs: MINUTE },
    badKeysPerIp: { limit: settings.badKeysPerMinute, windowMs: MINUTE },
    revocationsPerIp: { limit: settings.revocationsPerMinute, windowMs: MINUTE },
    clientRegistrationsPerIp: { limit: settings.clientRegistrationsPerHour, windowMs: HOUR },
    clientDocumentFetchesPerIp: {
      limit: settings.clientDocumentFetchesPerMinute,
      windowMs: MINUTE,
    },
    clientDocumentFailuresPerHost: {
      limit: settings.clientDocumentFetchesPerHostPerMinute,
      windowMs: MINUTE,
    },
    // A valid document is cached 5 minutes: one refetch per instance per 5 minutes is the need,
    // and the cache's eviction by a flood of other documents at most a few more.
    clientDocumentRefetchesPerClient: { limit: 10, windowMs: MINUTE },
  };
}
