// The OpenTelemetry SDK: loaded (dynamically, so a server without tracing never even reads it) only when an OTLP
// endpoint is configured. It registers a tracer provider with AsyncLocalStorage context and W3C trace-context
// propagation, exports spans in batches over OTLP/HTTP, and turns on the span helpers of src/ops/spans.ts,
// which are everything the rest of the code uses.
import type { SpanExporter } from '@opentelemetry/sdk-trace-node';
import type { Config } from '../config.ts';
import { setTracingEnabled } from './spans.ts';

export interface Tracing {
  /** Exports the spans still buffered, then stops tracing. */
  shutdown(): Promise<void>;
}

export interface TracingOptions {
  /** Replaces the OTLP exporter (tests read spans from an in-memory exporter); spans are then exported one by one. */
  exporter?: SpanExporter;
  /** service.version on every span. */
  serviceVersion?: string;
}

/**
 * Starts tracing per `settings` (OTEL_EXPORTER_OTLP_*); null, with nothing loaded, when no endpoint is configured
 * and no exporter is given.
 */
export async function startTracing(settings: Config['tracing'], options: TracingOptions = {}): Promise<Tracing | null> {
  if (!settings.tracesUrl && !options.exporter) return null;
  const [{ NodeTracerProvider, BatchSpanProcessor, SimpleSpanProcessor }, { resourceFromAttributes }, { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION }] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/semantic-conventions'),
  ]);
  let processor;
  if (options.exporter) {
    processor = new SimpleSpanProcessor(options.exporter);
  } else {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    // Headers (OTEL_EXPORTER_OTLP_HEADERS) and batch sizes (OTEL_BSP_*) are read from the environment by the SDK.
    processor = new BatchSpanProcessor(new OTLPTraceExporter({ url: settings.tracesUrl! }));
  }
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: settings.serviceName, ...(options.serviceVersion ? { [ATTR_SERVICE_VERSION]: options.serviceVersion } : {}) }),
    spanProcessors: [processor],
  });
  // Global provider, AsyncLocalStorage context manager, W3C traceparent/tracestate (and baggage) propagation.
  provider.register();
  setTracingEnabled(true);
  return {
    async shutdown() {
      setTracingEnabled(false);
      await provider.shutdown();
    },
  };
}
