import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { trace } from "@opentelemetry/api";
import { startTelemetry } from "../src/telemetry.ts";

/**
 * Tracing starts only when the standard variables ask for it (issue 56): unset, or disabled, or
 * with the exporter `none`, nothing is registered and every span stays the API's no-op. That it
 * exports when asked is scripts/test/opentelemetry.test.ts's, across three processes.
 */
describe("startTelemetry", () => {
  it("registers nothing unless OTEL_* asks for an exporter", () => {
    for (const env of [
      {},
      { OTEL_SERVICE_NAME: "named only" },
      { OTEL_SDK_DISABLED: "true", OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" },
      { OTEL_TRACES_EXPORTER: "none", OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" },
    ]) {
      assert.equal(startTelemetry("agentpass-test", env), null, JSON.stringify(env));
    }
    const span = trace.getTracer("probe").startSpan("probe");
    assert.equal(span.isRecording(), false, "no SDK was registered");
    span.end();
  });
});
