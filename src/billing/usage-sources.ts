// The product surfaces usage is reported under (`source` in billing logs and organization usage), and how the
// categories stored in usage_records map onto them.

export type UsageSource = 'workflow' | 'wand' | 'sim-chat' | 'mcp_copilot' | 'mothership_block' | 'knowledge-base' | 'voice-input' | 'enrichment' | 'voice-output' | 'api-tool';
export const USAGE_SOURCES: readonly UsageSource[] = ['workflow', 'wand', 'sim-chat', 'mcp_copilot', 'mothership_block', 'knowledge-base', 'voice-input', 'enrichment', 'voice-output', 'api-tool'];

/** Usage categories as stored, by the source the API names them with; a category equal to a source name maps to itself. */
const CATEGORIES_OF: Partial<Record<UsageSource, string[]>> = { workflow: ['workflow_run', 'workflow'], 'sim-chat': ['sim-chat', 'copilot', 'workspace-chat'] };
export const categoriesOf = (source: UsageSource) => CATEGORIES_OF[source] ?? [source];
export const sourceOf = (category: string): UsageSource | null => USAGE_SOURCES.find((s) => categoriesOf(s).includes(category)) ?? null;
/** Every stored category some source reports. */
export const KNOWN_CATEGORIES = USAGE_SOURCES.flatMap(categoriesOf);
