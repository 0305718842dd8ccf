export {
  type BearerCredential,
  createErrorHandler,
  HttpError,
  readBearer,
  renderError,
  unauthorized,
} from "./http-error.ts";
export { type JsonBody, readHeader, readJsonBody } from "./read-body.ts";
