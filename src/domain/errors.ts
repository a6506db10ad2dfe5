// The error domain code raises. It says what went wrong in the domain's terms (the kind of failure, a message
// a client can act on, optional details); src/http/errors.ts is the one place that turns a kind into an HTTP
// status and error code. Domain modules never import from src/http/.

export type DomainErrorKind =
  /** The input breaks a rule the schema cannot express (400). */
  | 'invalid'
  /** The thing does not exist, or the caller may not know it exists (404). */
  | 'not_found'
  /** The caller is known but may not do this (403). */
  | 'forbidden'
  /** The request collides with the current state (a name taken, a run already settled) (409). */
  | 'conflict'
  /** The content is larger or deeper than a configured limit (413). */
  | 'too_large'
  /** The resource is locked against this change (423). */
  | 'locked'
  /** The plan's usage limit is reached (402). */
  | 'usage_limit'
  /** A precondition the caller stated (If-Match) does not hold (412). */
  | 'precondition'
  /** A dependency is down or the server is busy; retrying later may work (503). */
  | 'unavailable';

export interface ValidationDetail {
  /** Where in the request the problem is, e.g. ['body', 'name']. */
  path: (string | number)[];
  message: string;
  code?: string;
}

export class DomainError extends Error {
  readonly kind: DomainErrorKind;
  /** Machine-readable extras (the column that repeats a value, the run id that is taken), or validation details for `invalid`. */
  readonly details: unknown;
  constructor(kind: DomainErrorKind, message: string, details?: unknown) {
    super(message);
    this.name = new.target.name;
    this.kind = kind;
    this.details = details;
  }
}

/** `what` not found, worded as every API 404 is. */
export const domainNotFound = (what: string) => new DomainError('not_found', `${what} not found.`);
/** One invalid field, with the request path it sits at. */
export const invalidInput = (path: (string | number)[], message: string, code = 'custom') => new DomainError('invalid', message, [{ code, keys: [], path, message }]);
