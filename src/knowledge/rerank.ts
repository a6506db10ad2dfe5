// Optional reranking through a Cohere-compatible `/rerank` endpoint (Cohere, or a local server speaking the
// same protocol): the search's candidates are re-ordered by the model's relevance score. Best effort: any
// failure leaves the search's own order (the caller reports rerankerStatus 'unavailable').
import type { KnowledgeSettings } from '../config.ts';
import { SpanKind, inSpan, withTraceHeaders } from '../ops/spans.ts';

export class RerankError extends Error {}

export async function rerank(
  settings: NonNullable<KnowledgeSettings['rerank']>,
  model: string,
  query: string,
  documents: string[],
  topN: number,
): Promise<{ index: number; score: number }[]> {
  let res: Response;
  try {
    res = await inSpan(`rerank ${model}`, { kind: SpanKind.CLIENT, attributes: { 'gen_ai.request.model': model, 'owa.rerank.documents': documents.length } }, async (span) => {
      const answer = await fetch(`${settings.baseUrl}/rerank`, {
        method: 'POST',
        headers: withTraceHeaders({ 'content-type': 'application/json', ...(settings.apiKey ? { authorization: `Bearer ${settings.apiKey}` } : {}) }),
        body: JSON.stringify({ model, query, documents, top_n: topN }),
        signal: AbortSignal.timeout(settings.timeoutMs),
      });
      span?.setAttribute('http.response.status_code', answer.status);
      return answer;
    });
  } catch (err) {
    throw new RerankError(`The rerank endpoint could not be reached: ${(err as Error).message}`);
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new RerankError(`The rerank endpoint answered ${res.status}.`);
  }
  let body: { results?: { index?: unknown; relevance_score?: unknown }[] };
  try {
    body = (await res.json()) as typeof body;
  } catch {
    throw new RerankError('The rerank endpoint answered something that is not JSON.');
  }
  if (!Array.isArray(body.results)) throw new RerankError('The rerank endpoint answered no results.');
  const out: { index: number; score: number }[] = [];
  for (const r of body.results) {
    if (typeof r.index !== 'number' || !Number.isInteger(r.index) || r.index < 0 || r.index >= documents.length || typeof r.relevance_score !== 'number') {
      throw new RerankError('The rerank endpoint answered a malformed result.');
    }
    out.push({ index: r.index, score: r.relevance_score });
  }
  return out.sort((a, b) => b.score - a.score).slice(0, topN);
}
