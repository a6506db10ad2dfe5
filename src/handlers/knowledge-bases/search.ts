// Search across the knowledge bases of a workspace (vector or hybrid), with tag filters, pages, fusion weight,
// typo tolerance and highlights.
import type { Handler } from '../../../generated/handlers.ts';
import { badRequest, invalidField } from '../../http/errors.ts';
import { resolveFilters } from '../../knowledge/tags.ts';
import { runSearch, type SearchHit } from '../../knowledge/search.ts';
import { rerank, RerankError } from '../../knowledge/rerank.ts';
import type { TagDefinitionRecord } from '../../store/knowledge-bases.ts';
import { loadBase } from './shared.ts';

export const searchKnowledge: Handler<'searchKnowledge'> = async ({ body, ctx }) => {
  const ids = [...new Set(Array.isArray(body.knowledgeBaseIds) ? body.knowledgeBaseIds : [body.knowledgeBaseIds])];
  const query = body.query !== undefined && body.query.trim() !== '' ? body.query : null;
  const filters = body.tagFilters ?? [];
  if (query === null && filters.length === 0) {
    throw badRequest('Give a query, tag filters, or both.', [{ code: 'custom', keys: [], path: ['body', 'query'], message: 'query is required unless tagFilters are given' }]);
  }
  const bases = [];
  for (const id of ids) bases.push(await loadBase(ctx, id));
  const first = bases[0]!;
  const mixed = bases.find((b) => b.embeddingModel !== first.embeddingModel || b.embeddingDimension !== first.embeddingDimension);
  if (mixed) {
    throw invalidField(
      ['body', 'knowledgeBaseIds'],
      `Knowledge bases embedded with different models cannot be searched together: ${first.id} uses ${first.embeddingModel} (${first.embeddingDimension}), ${mixed.id} uses ${mixed.embeddingModel} (${mixed.embeddingDimension}).`,
    );
  }
  const provider = ctx.services.knowledge.provider;
  if (query !== null && (first.embeddingModel !== provider.model || first.embeddingDimension !== provider.dimension)) {
    throw invalidField(
      ['body', 'knowledgeBaseIds'],
      `These knowledge bases are embedded with ${first.embeddingModel} (${first.embeddingDimension}) but this server embeds queries with ${provider.model} (${provider.dimension}).`,
    );
  }
  const defs = new Map<string, TagDefinitionRecord[]>();
  for (const b of bases) defs.set(b.id, await ctx.services.store.knowledgeBases.tags(b.id));
  const resolved = resolveFilters(filters, [...defs.values()], ['body', 'tagFilters']);
  const topK = body.topK ?? 10;
  const mode = body.searchMode ?? ctx.services.config.knowledge.defaultSearchMode;
  const offset = body.offset ?? 0;
  // Options that only mean something with a query, or with the hybrid full-text leg, are refused elsewhere.
  for (const option of ['vectorWeight', 'typoTolerance', 'highlight'] as const) {
    if (body[option] !== undefined && query === null) throw invalidField(['body', option], `${option} needs a query.`);
  }
  for (const option of ['vectorWeight', 'typoTolerance'] as const) {
    if (body[option] !== undefined && mode !== 'hybrid') throw invalidField(['body', option], `${option} applies to hybrid search only (this search is ${mode}).`);
  }
  if (offset > 0 && body.rerankerEnabled === true) throw invalidField(['body', 'offset'], 'A reranked search has no stable order to page through: leave out offset or rerankerEnabled.');
  const settings = ctx.services.config.knowledge.rerank;
  const reranking = body.rerankerEnabled === true && query !== null && settings !== null;
  const pool = reranking ? Math.max(topK, body.rerankerInputCount ?? Math.min(100, topK * 4)) : topK;
  const { hits, hasMore } = await runSearch(ctx.services.store, ctx.services.knowledge, {
    bases, query, topK: pool, filters: resolved, mode, defs, offset, vectorWeight: body.vectorWeight, typoTolerance: body.typoTolerance, highlight: body.highlight,
  });
  let results: SearchHit[] = hits.slice(0, topK);
  let rerankerStatus: 'not_requested' | 'skipped' | 'unavailable' | 'applied' = !body.rerankerEnabled ? 'not_requested' : query === null ? 'skipped' : 'unavailable';
  if (reranking && hits.length > 0) {
    try {
      const order = await rerank(settings!, body.rerankerModel ?? 'rerank-v4.0-fast', query!, hits.map((h) => h.content), topK);
      results = order.map((o, i) => ({ ...hits[o.index]!, rank: i + 1, rankScore: o.score, rerankerScore: o.score }));
      rerankerStatus = 'applied';
    } catch (err) {
      if (!(err instanceof RerankError)) throw err;
      ctx.log.warn({ err: err.message }, 'rerank failed; the search order is kept');
    }
  } else if (reranking) rerankerStatus = 'applied';
  return {
    status: 200,
    body: { data: { results, query: query ?? '', knowledgeBaseIds: ids, topK, totalResults: results.length, nextOffset: hasMore && body.rerankerEnabled !== true ? offset + topK : null, rerankerStatus } },
  };
};
