/**
 * The spec reference as a Markdown table, generated from the JSON Schema (itself generated from
 * the zod schema): docs/functions-and-hooks.md's copy is kept in sync by `npm run schema` and checked by a test.
 */
import { functionSpecJsonSchema } from './json-schema.js';

interface Node {
  type?: string | string[];
  description?: string;
  default?: unknown;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  pattern?: string;
  properties?: Record<string, Node>;
  items?: Node;
  required?: string[];
}

export const REFERENCE_BEGIN = '<!-- spec-reference:begin (npm run schema) -->';
export const REFERENCE_END = '<!-- spec-reference:end -->';

function typeOf(n: Node): string {
  if (n.enum) return n.enum.length > 6 ? `${n.enum.slice(0, 4).join(' \\| ')} \\| …` : n.enum.join(' \\| ');
  if (n.type === 'array')
    return `${n.items?.type === 'object' ? 'list of objects' : `list of ${typeOf(n.items ?? {})}`}`;
  const t = Array.isArray(n.type) ? n.type.join(' \\| ') : (n.type ?? 'any');
  const range =
    n.minimum !== undefined || n.maximum !== undefined
      ? ` ${n.minimum ?? ''}…${n.maximum !== undefined && n.maximum < 1e15 ? n.maximum : ''}`
      : '';
  return `${t}${range}`;
}

function rows(props: Record<string, Node>, required: string[], prefix: string): string[] {
  return Object.entries(props).flatMap(([key, n]) => {
    const path = `${prefix}${key}`;
    const def =
      n.default === undefined
        ? required.includes(key)
          ? 'required'
          : ''
        : typeof n.default === 'object'
          ? ''
          : `\`${JSON.stringify(n.default)}\``;
    const line = `| \`${path}\` | ${typeOf(n)} | ${def} | ${(n.description ?? '').replace(/\|/g, '\\|')} |`;
    if (n.type === 'object' && n.properties) return [line, ...rows(n.properties, n.required ?? [], `${path}.`)];
    if (n.type === 'array' && n.items?.properties)
      return [line, ...rows(n.items.properties, n.items.required ?? [], `${path}[].`)];
    return [line];
  });
}

export function specReference(): string {
  const schema = functionSpecJsonSchema() as Node;
  return [
    '| field | type | default | what it means |',
    '| --- | --- | --- | --- |',
    ...rows(schema.properties ?? {}, schema.required ?? [], ''),
  ].join('\n');
}

/** A page's text with its reference section replaced by the generated one. */
export function withReference(readme: string): string {
  const begin = readme.indexOf(REFERENCE_BEGIN);
  const end = readme.indexOf(REFERENCE_END);
  if (begin === -1 || end === -1) throw new Error(`the page has no ${REFERENCE_BEGIN} … ${REFERENCE_END} section`);
  return `${readme.slice(0, begin + REFERENCE_BEGIN.length)}\n${specReference()}\n${readme.slice(end)}`;
}
