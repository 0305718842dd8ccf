/** The current time in epoch milliseconds. Injected everywhere so expiry is tested exactly. */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();
