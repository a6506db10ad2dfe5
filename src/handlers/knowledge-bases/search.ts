// Search across the knowledge bases of a workspace (vector or hybrid), with tag filters.
import type { Handler } from '../../../generated/handlers.ts';
import { badRequest, invalidField } from '../../http/errors.ts';
import { resolveFilters } from '../../knowledge/tags.ts';
import { runSearch } from '../../knowledge/search.ts';
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
  const { hits } = await runSearch(ctx.services.store, ctx.services.knowledge, { bases, query, topK, filters: resolved, mode, defs });
  const rerankerStatus = !body.rerankerEnabled ? 'not_requested' : query === null ? 'skipped' : 'unavailable';
  return {
    status: 200,
    body: { data: { results: hits, query: query ?? '', knowledgeBaseIds: ids, topK, totalResults: hits.length, rerankerStatus } },
  };
};
