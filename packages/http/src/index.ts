export { type OpenApiDocument, renderDocsPage } from "./docs-page.ts";
export {
  type BearerCredential,
  createErrorHandler,
  HttpError,
  readBearer,
  renderError,
  unauthorized,
} from "./http-error.ts";
export { type JsonBody, readHeader, readJsonBody, readTextBody } from "./read-body.ts";
export { type RunningServer, type ServableService, startServer } from "./server.ts";
