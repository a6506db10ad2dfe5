// Naming and input schemas of workflows served as MCP tools (pure functions of src/mcp/tools.ts).
import { describe, expect, it } from 'vitest';
import { inputSchemaFor, normalizeToolName, toolDescriptionFor } from '../src/mcp/tools.ts';

describe('tool names', () => {
  it('lowercases, keeps [a-z0-9 _-], turns spaces and hyphens into one underscore and trims them', () => {
    expect(normalizeToolName('Greet Someone!')).toBe('greet_someone');
    expect(normalizeToolName('  Daily -- Report (v2) ')).toBe('daily_report_v2');
    expect(normalizeToolName('__already_snake__')).toBe('already_snake');
    expect(normalizeToolName('Café Übersicht')).toBe('caf_bersicht');
  });
  it('falls back to workflow_tool and cuts at 64 characters without a trailing underscore', () => {
    expect(normalizeToolName('!!!')).toBe('workflow_tool');
    expect(normalizeToolName('')).toBe('workflow_tool');
    const long = normalizeToolName(`${'a'.repeat(63)} b`);
    expect(long).toBe('a'.repeat(63));
    expect(normalizeToolName('x'.repeat(100))).toHaveLength(64);
  });
  it('describes a tool by its own description, else the workflow, else its name', () => {
    expect(toolDescriptionFor('Mine', { name: 'W', description: 'Theirs' })).toBe('Mine');
    expect(toolDescriptionFor(null, { name: 'W', description: 'Theirs' })).toBe('Theirs');
    expect(toolDescriptionFor(null, { name: 'W', description: null })).toBe('Execute workflow: W');
  });
});

describe('input schemas', () => {
  const state = (inputFormat: unknown, type = 'start_trigger') => ({
    blocks: { s: { id: 's', type, name: 'Start', subBlocks: { inputFormat: { id: 'inputFormat', type: 'input-format', value: inputFormat } }, enabled: true } },
    edges: [],
  });
  it('maps Start-block field types, requires every field and describes each by its description or name', () => {
    const schema = inputSchemaFor(
      state([
        { name: 'q', type: 'string', description: 'The question' },
        { name: 'n', type: 'number' },
        { name: 'flag', type: 'boolean' },
        { name: 'opts', type: 'object' },
        { name: 'list', type: 'array' },
        { name: 'uploads', type: 'files' },
        { name: 'docs', type: 'file[]' },
        { name: 'odd', type: 'whatever' },
        { name: '', type: 'string' },
        { name: 'q', type: 'number' },
      ]) as never,
    );
    expect(schema.required).toEqual(['q', 'n', 'flag', 'opts', 'list', 'uploads', 'docs', 'odd']);
    expect(schema.properties).toMatchObject({
      q: { type: 'string', description: 'The question' },
      n: { type: 'number', description: 'n' },
      flag: { type: 'boolean' },
      opts: { type: 'object' },
      list: { type: 'array' },
      uploads: { type: 'array' },
      docs: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' }, url: { type: 'string' }, type: { type: 'string' }, size: { type: 'number' } } } },
      odd: { type: 'string' },
    });
  });
  it('applies description overrides, ignores unknown names, reads JSON-text field lists and API triggers', () => {
    const schema = inputSchemaFor(state(JSON.stringify([{ name: 'city', type: 'string' }]), 'api_trigger') as never, [
      { name: 'city', description: 'Where' },
      { name: 'nope', description: 'ignored' },
    ]);
    expect(schema).toEqual({ type: 'object', properties: { city: { type: 'string', description: 'Where' } }, required: ['city'] });
    expect(inputSchemaFor({ blocks: {}, edges: [] } as never)).toEqual({ type: 'object', properties: {}, required: [] });
  });
});
