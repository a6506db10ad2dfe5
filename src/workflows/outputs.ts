// What a block of a workflow outputs, as references (`<name.path>`) and hosted chat output paths read it: the
// block registry's outputs, the fields a start or human step declares in its input format, and the `error` and
// `code` a block with an error path hands on when it fails. Open-ended outputs (any JSON) end the check: paths
// below them cannot be known before a run. No HTTP here.
import { getBlockDefinition, type OutputDefinition } from './blocks.ts';
import { inputFields, type Block, type WorkflowState } from './state.ts';

const FIELD_OUTPUT_TYPES: Record<string, OutputDefinition['type']> = { string: 'string', number: 'number', boolean: 'boolean', object: 'json', array: 'array' };

/** A block's outputs by name; null when any name may be one (an unknown block type, or input fields left open). */
export function blockOutputs(state: Pick<WorkflowState, 'edges'>, block: Block): Record<string, OutputDefinition> | null {
  const def = getBlockDefinition(block.type);
  if (!def) return null;
  const outputs: Record<string, OutputDefinition> = { ...def.outputs };
  if (def.inputFieldOutputs) {
    const fields = inputFields(block);
    if (fields.length === 0) return null;
    for (const f of fields) outputs[f.name] = { type: FIELD_OUTPUT_TYPES[f.type] ?? 'any', description: f.description ?? `The input field "${f.name}".` };
  }
  if (state.edges.some((e) => e.source === block.id && e.sourceHandle === 'error')) {
    outputs.error = { type: 'string', description: 'On the error path: why the block failed.' };
    outputs.code = { type: 'string', description: 'On the error path: the error code.' };
  }
  return outputs;
}

export type OutputPathCheck = { ok: true } | { ok: false; reason: string; validPaths: string[] };

/**
 * Whether `path` (as parsePath splits `result.items[0]`) can name something in the block's output; the reason
 * names the block and lists its outputs.
 */
export function checkOutputPath(state: Pick<WorkflowState, 'edges'>, block: Block, path: (string | number)[]): OutputPathCheck {
  const outputs = blockOutputs(state, block);
  if (outputs === null || path.length === 0) return { ok: true };
  const validPaths = Object.keys(outputs);
  const [first, ...rest] = path;
  const output = typeof first === 'string' && Object.hasOwn(outputs, first) ? outputs[first]! : undefined;
  if (!output) {
    return { ok: false, reason: `Block "${block.name}" has no output "${String(first)}"; its outputs are ${validPaths.join(', ')}.`, validPaths };
  }
  if (rest.length === 0 || output.type === 'any' || output.type === 'json') return { ok: true };
  const [next] = rest;
  const indexable = output.type === 'array' || output.type === 'string';
  // Below an array element anything may follow; a string's character or length ends the path.
  if (indexable && typeof next === 'number' && (output.type === 'array' || rest.length === 1)) return { ok: true };
  if (indexable && next === 'length' && rest.length === 1) return { ok: true };
  return {
    ok: false,
    reason: `The output "${first}" of block "${block.name}" is ${output.type === 'array' ? 'an' : 'a'} ${output.type} and has no "${rest.join('.')}".`,
    validPaths,
  };
}
