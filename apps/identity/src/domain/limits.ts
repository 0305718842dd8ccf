import type { RateLimitSettings } from "../config.ts";

/** API bodies are small JSON objects; anything larger is refused before it is read. */
export const MAX_BODY_BYTES = 64 * 1024;

const MINUTE = 60 * 1000;

/**
 * Every rate limit, per fixed window, in the shared rate-limit store:
 * sign-in mail per address and per client address, device-login codes per client, and user
 * codes looked up or decided per signed-in account (10 logins' worth), fixed;
 * the hot paths' budgets from the configuration.
 */
export function rateLimits(settings: RateLimitSettings) {
  return {
    signInCodesPerAddress: { limit: 5, windowMs: 15 * MINUTE },
    signInCodesPerIp: { limit: 30, windowMs: 15 * MINUTE },
    signInCodesPerRememberedBrowser: { limit: 5, windowMs: 15 * MINUTE },
    deviceCodesPerIp: { limit: 30, windowMs: 15 * MINUTE },
    deviceCodeGuessesPerAccount: { limit: 20, windowMs: 15 * MINUTE },
    mintsPerUserKey: { limit: settings.mintsPerMinute, windowMs: MINUTE },
    failedVerifiesPerPartnerKey: { limit: settings.failedVerifiesPerMinute, windowMs: MINUTE },
    badKeysPerIp: { limit: settings.badKeysPerMinute, windowMs: MINUTE },
  };
}
