// Spans for requests, runs, blocks and outgoing calls, through the OpenTelemetry API only. Until the SDK is
// started (src/ops/tracing.ts, when an OTLP endpoint is configured) every helper here is a plain call: no span,
// no context switch, no header written, so tracing costs nothing when it is off.
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, context, propagation, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';

export { SpanKind };
export type { Span, Context };

let enabled = false;

/** True once the SDK is registered; only src/ops/tracing.ts turns it on. */
export function tracingEnabled(): boolean {
  return enabled;
}

/** Called by src/ops/tracing.ts after it registered a tracer provider (and off again when it shut down). */
export function setTracingEnabled(on: boolean): void {
  enabled = on;
}

const tracer = () => trace.getTracer('open-workspace-automation');

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** The parent; the active context by default. */
  parent?: Context;
}

/**
 * Runs `fn` inside a new active span that ends when `fn` settles; a throw marks the span as an error. With
 * tracing off `fn` is called with null and nothing else happens.
 */
export function inSpan<T>(name: string, options: SpanOptions, fn: (span: Span | null) => Promise<T>): Promise<T> {
  if (!enabled) return fn(null);
  return tracer().startActiveSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes }, options.parent ?? context.active(), async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      failSpan(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Marks a span as failed with the error's message (its stack stays in the logs). */
export function failSpan(span: Span, err: unknown): void {
  const message = err instanceof Error ? err.message : String(err);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
  span.addEvent('exception', { 'exception.type': (err as { code?: string; name?: string })?.code ?? (err as Error)?.name ?? 'Error', 'exception.message': message });
}

/** Starts a span that the caller ends (a request span lives as long as its response); null when tracing is off. */
export function startSpan(name: string, options: SpanOptions): { span: Span; context: Context } | null {
  if (!enabled) return null;
  const parent = options.parent ?? context.active();
  const span = tracer().startSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes }, parent);
  return { span, context: trace.setSpan(parent, span) };
}

/** Calls `fn` with `ctx` as the active context (a no-op wrapper without one or with tracing off). */
export function withContext<T>(ctx: Context | undefined, fn: () => T): T {
  return enabled && ctx ? context.with(ctx, fn) : fn();
}

/** The caller's trace context from W3C `traceparent`/`tracestate` headers (a new trace without them). */
export function contextFromHeaders(headers: Record<string, string | string[] | undefined>): Context {
  return propagation.extract(ROOT_CONTEXT, headers);
}

/** `headers` plus `traceparent`/`tracestate` naming the active span, so the callee continues this trace. */
export function withTraceHeaders(headers: Record<string, string>): Record<string, string> {
  if (!enabled) return headers;
  const out = { ...headers };
  propagation.inject(context.active(), out);
  return out;
}

/**
 * The active trace context as text to store with work done later (an async run executed by the queue after its
 * request returned); null when tracing is off or nothing is being traced.
 */
export function storableTraceContext(): string | null {
  if (!enabled || !trace.getSpan(context.active())) return null;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ? JSON.stringify(carrier) : null;
}

/** The context stored by storableTraceContext, as a parent; undefined when there is none or it is unreadable. */
export function storedTraceContext(text: string | null | undefined): Context | undefined {
  if (!enabled || !text) return undefined;
  try {
    const carrier = JSON.parse(text) as Record<string, string>;
    const ctx = propagation.extract(ROOT_CONTEXT, carrier);
    return trace.getSpanContext(ctx) ? ctx : undefined;
  } catch {
    return undefined;
  }
}

/** True when a span is active (a run executed inside a request continues that request's trace). */
export function hasActiveSpan(): boolean {
  return enabled && trace.getSpan(context.active()) !== undefined;
}
