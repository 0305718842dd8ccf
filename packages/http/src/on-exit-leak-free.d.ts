/** The part of `on-exit-leak-free` (pino's own dependency, which ships no types) used here. */
declare module "on-exit-leak-free" {
  /** Calls `fn(object, "exit")` when the process exits, unless `object` was collected first. */
  function register<T extends object>(object: T, fn: (object: T, event: "exit") => void): void;
  function unregister(object: object): void;
  const onExit: { register: typeof register; unregister: typeof unregister };
  export default onExit;
}
