export { apiDocsEndpoints } from "./api-docs.ts";
export { type ApiOptions, createApiListener, type Listener } from "./api-router.ts";
export {
  clientAddress,
  clientAddressOf,
  isLoopbackRequest,
  type ProxyHeader,
  parseTrustProxy,
  rateLimitKey,
  type TrustProxy,
  trustingHeader,
} from "./client-address.ts";
export {
  childTraceparent,
  requestIdOf,
  type TraceContext,
  traceContextOf,
} from "./correlation.ts";
export {
  type Admission,
  type Answer,
  type ApiCall,
  type BodyEncoding,
  defineEndpoint,
  definePage,
  type Endpoint,
  type EndpointInput,
  type EndpointRequest,
  type InputFailure,
  MAX_JSON_DEPTH,
  type Method,
  type Page,
  type ParsedInput,
  type RefusedRequest,
} from "./endpoint.ts";
export { isLocalDevelopment, isLoopbackUrl, readEnvironment, urlSetting } from "./env-check.ts";
export { healthEndpoints } from "./health.ts";
export {
  answerError,
  type BearerCredential,
  COMMON_ERRORS,
  defineErrors,
  type ErrorDef,
  HttpError,
  type PlainAnswer,
  readBearer,
  unauthorized,
} from "./http-error.ts";
export { isoTime } from "./iso-time.ts";
export { createLogDestination, type LogDestination } from "./log-destination.ts";
export { createLoopbackClient, type LoopbackRequest } from "./loopback.ts";
export {
  addDatabaseMetrics,
  createServiceMetrics,
  type DatabaseSources,
  METRICS_PATH,
  mayReadMetrics,
  type ServiceMetrics,
} from "./metrics.ts";
export { buildOpenApiDocument, type DocumentedRoute, RATE_LIMIT_HEADERS } from "./openapi.ts";
export { type JsonBody, readIncomingJson, readIncomingText } from "./read-body.ts";
export {
  DEFAULT_DRAIN_MS,
  LOOPBACK_HOSTS,
  type RunningServer,
  type ServableService,
  type ServerOptions,
  SOCKET_LIMITS,
  startServer,
} from "./server.ts";
export { stopOnSignals } from "./shutdown.ts";
export { startTelemetry, type Telemetry } from "./telemetry.ts";
export { escapeControls, terminalText } from "./terminal-text.ts";
