/** API bodies are small JSON objects; anything larger is refused before it is read. */
export const MAX_BODY_BYTES = 64 * 1024;

/**
 * Rate limits of the slow paths, per fixed window, shared by every instance through the
 * database: sign-in mail per address and per client address, device-login codes per client.
 */
export const RATE_LIMITS = {
  signInCodesPerAddress: { limit: 5, windowMs: 15 * 60 * 1000 },
  signInCodesPerIp: { limit: 30, windowMs: 15 * 60 * 1000 },
  deviceCodesPerIp: { limit: 30, windowMs: 15 * 60 * 1000 },
} as const;
