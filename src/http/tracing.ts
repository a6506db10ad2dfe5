// One server span per request, when tracing is on (src/ops/tracing.ts): the caller's W3C trace context
// (traceparent/tracestate) becomes its parent, and it is named by the operation the router matched, so span
// names stay as bounded as metric labels. No body, query string or credential is recorded.
import type { RequestHandler } from 'express';
import { SpanKind, contextFromHeaders, failSpan, startSpan, withContext } from '../ops/spans.ts';
import { matchedOperation, setRequestTraceContext } from './pipeline.ts';

export function traceRequests(): RequestHandler {
  return (req, res, next) => {
    const method = req.method;
    const started = startSpan(method, {
      kind: SpanKind.SERVER,
      parent: contextFromHeaders(req.headers),
      attributes: { 'http.request.method': method, 'url.scheme': req.protocol, 'owa.request_id': req.id },
    });
    if (!started) return next();
    const { span, context } = started;
    setRequestTraceContext(res, context);
    res.once('close', () => {
      const operation = matchedOperation(res);
      if (operation) {
        span.updateName(operation.operationId);
        span.setAttributes({ 'owa.operation_id': operation.operationId, 'http.route': operation.path });
      }
      span.setAttribute('http.response.status_code', res.statusCode);
      if (res.statusCode >= 500) failSpan(span, new Error(`answered ${res.statusCode}`));
      if (!res.writableFinished) span.setAttribute('owa.aborted', true);
      span.end();
    });
    withContext(context, next);
  };
}
