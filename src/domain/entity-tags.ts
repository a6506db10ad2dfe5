// The entity tag of a stored document: what a conditional write (If-Match) compares, computed from what is
// stored, so domain services that recompute a document inside a transaction give the same tag a read showed.
import { createHash } from 'node:crypto';

/** A strong entity tag for a stored text: the first 128 bits of its SHA-256, quoted. */
export function tagOfText(text: string): string {
  return `"${createHash('sha256').update(text).digest('base64url').slice(0, 22)}"`;
}

/** The tag of a document's representation (a JSON value built the same way on every read and write). */
export function tagOf(value: unknown): string {
  return tagOfText(JSON.stringify(value));
}
