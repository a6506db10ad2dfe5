// Conditional requests (RFC 9110 §13), an extension of this server: entity tags of documents, `If-Match` on
// their writes and `If-None-Match` on their reads. The operations involved say so in the spec (`x-etag`); the
// pipeline parses the headers once, and a handler gives the document's current tag (computed from what is
// stored) to ctx.precondition inside the transaction that writes, so the comparison and the write are atomic.
import { ApiError, badRequest } from './errors.ts';
// How a document's tag is computed is the domain's (src/domain/entity-tags.ts); re-exported for handlers.
export { tagOf, tagOfText } from '../domain/entity-tags.ts';

/** A parsed `If-Match` / `If-None-Match`: `*`, or the listed tags. */
export type TagCondition = { any: true } | { any: false; tags: { weak: boolean; opaque: string }[] };

// entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE, etagc = %x21 / %x23-7E / obs-text; a list is comma separated.
const ENTITY_TAG = /^(W\/)?"([\x21\x23-\x7E\x80-\xFF]*)"$/;

/** Parses the header; a malformed value is a 400 naming the header (no tag can match something unreadable). */
export function parseTagCondition(value: string | undefined, header: 'if-match' | 'if-none-match'): TagCondition | null {
  if (value === undefined) return null;
  const trimmed = value.trim();
  if (trimmed === '*') return { any: true };
  const tags: { weak: boolean; opaque: string }[] = [];
  for (const item of trimmed.split(',')) {
    const part = item.trim();
    if (part === '') continue;
    const m = ENTITY_TAG.exec(part);
    if (!m) {
      const message = `${header === 'if-match' ? 'If-Match' : 'If-None-Match'} must be * or a list of quoted entity tags such as "abc" (the value of an ETag header).`;
      throw badRequest(message, [{ code: 'invalid_string', keys: [], path: ['header', header], message }]);
    }
    tags.push({ weak: m[1] !== undefined, opaque: m[2]! });
  }
  if (tags.length === 0) {
    const message = `${header === 'if-match' ? 'If-Match' : 'If-None-Match'} names no entity tag.`;
    throw badRequest(message, [{ code: 'invalid_string', keys: [], path: ['header', header], message }]);
  }
  return { any: false, tags };
}

const opaqueOf = (tag: string) => tag.replace(/^W\//, '').slice(1, -1);

/** If-Match uses the strong comparison: a weak tag never matches, `*` matches any existing document. */
export function ifMatchPasses(condition: TagCondition, current: string | null): boolean {
  if (current === null) return false;
  if (condition.any) return true;
  const opaque = opaqueOf(current);
  return condition.tags.some((t) => !t.weak && t.opaque === opaque);
}

/** If-None-Match uses the weak comparison: true when the client's copy is current (answer 304). */
export function ifNoneMatchHits(condition: TagCondition, current: string | null): boolean {
  if (current === null) return false;
  if (condition.any) return true;
  const opaque = opaqueOf(current);
  return condition.tags.some((t) => t.opaque === opaque);
}

/** The 412: the current tag in `details.etag` and in the `ETag` header (null and absent with no document). */
export function preconditionFailed(current: string | null): ApiError {
  const message =
    current === null
      ? 'If-Match requires the document to exist, and it does not; nothing was written.'
      : `The document changed since the tag in If-Match was read; it is now ${current}. Read it again and retry; nothing was written.`;
  return new ApiError('PRECONDITION_FAILED', message, { etag: current }, current === null ? {} : { ETag: current });
}

/**
 * Throws the 412 unless the write's conditions accept the document's current tag: If-Match must match it,
 * If-None-Match (where a write declares it; `*` makes a write create-only) must not. `current` may be a
 * function, so a request without either header never pays for computing a tag.
 */
export function assertPrecondition(ifMatch: TagCondition | null, ifNoneMatch: TagCondition | null, current: string | null | (() => string | null)): void {
  if (ifMatch === null && ifNoneMatch === null) return;
  const tag = typeof current === 'function' ? current() : current;
  if (ifMatch !== null && !ifMatchPasses(ifMatch, tag)) throw preconditionFailed(tag);
  if (ifNoneMatch !== null && ifNoneMatchHits(ifNoneMatch, tag)) {
    throw new ApiError('PRECONDITION_FAILED', `If-None-Match names the document's current tag ${tag} (or *, and it exists); nothing was written.`, { etag: tag }, tag === null ? {} : { ETag: tag });
  }
}
