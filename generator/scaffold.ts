// `npm run generate -- --scaffold`: a typed stub for each operation that has no handler yet.
// Stubs are appended to the tag's module (created when missing); existing code is never rewritten.
import fs from 'node:fs';
import path from 'node:path';
import type { OperationModel } from './model.ts';

export async function scaffoldHandlers(
  root: string,
  operations: OperationModel[],
  format: (code: string) => Promise<string>,
): Promise<string[]> {
  const written: string[] = [];
  const byModule = new Map<string, OperationModel[]>();
  for (const op of operations) byModule.set(op.module, [...(byModule.get(op.module) ?? []), op]);

  for (const [module, ops] of byModule) {
    const file = path.join(root, 'src', 'handlers', `${module}.ts`);
    const exists = fs.existsSync(file);
    const current = exists ? fs.readFileSync(file, 'utf8') : '';
    const missing = ops.filter((op) => !new RegExp(`export (const|async function|function) ${op.operationId}\\b`).test(current));
    if (missing.length === 0) continue;

    let addition = '';
    if (!exists) {
      addition +=
        `// Handlers for the ${ops[0]!.tag} operations.\n` +
        `import type { Handler } from '../../generated/handlers.ts';\n` +
        `import { notImplemented } from '../http/errors.ts';\n`;
    } else {
      const needs: string[] = [];
      if (!/import type \{[^}]*\bHandler\b[^}]*\} from '..\/..\/generated\/handlers.ts'/.test(current)) {
        needs.push(`import type { Handler } from '../../generated/handlers.ts';`);
      }
      if (!/\bnotImplemented\b/.test(current)) needs.push(`import { notImplemented } from '../http/errors.ts';`);
      if (needs.length) addition += `\n${needs.join('\n')}\n`;
    }
    for (const op of missing) {
      addition +=
        `\n/** ${op.method.toUpperCase()} ${op.path} — ${op.summary} */\n` +
        `export const ${op.operationId}: Handler<'${op.operationId}'> = async (_input) => {\n` +
        `  throw notImplemented('${op.operationId}');\n` +
        `};\n`;
      written.push(`src/handlers/${module}.ts: ${op.operationId}`);
    }
    fs.mkdirSync(path.dirname(file), { recursive: true });
    // Only the appended text is new; imports added to an existing file land mid-file, which TS allows.
    fs.writeFileSync(file, exists ? current + addition : await format(addition));
  }
  return written;
}
