import type { MethodName } from './index';

/**
 * Method names of the previous release that `povdesk call` and the MCP server still take, each
 * the method it became (issue 39 split `templates.*` into `bake.*` and `labTemplates.*`). Scripts
 * and MCP clients' tool allow-lists spell the old names; the app, the renderer and the contract do
 * not. --help and the MCP listing flag them deprecated. Remove this table in the next release.
 */
export const DEPRECATED_METHOD_NAMES = {
  'templates.runnerScript': 'bake.runnerScript',
  'templates.bake': 'bake.start',
  'templates.baked': 'bake.list',
  'templates.export': 'bake.export',
  'templates.list': 'labTemplates.list',
  'templates.createLocal': 'labTemplates.create',
  'templates.updateLocal': 'labTemplates.update',
  'templates.deleteLocal': 'labTemplates.delete',
} as const satisfies Record<string, MethodName>;

/** The method an old name became, or undefined for any other name. */
export function renamedMethod(name: string): MethodName | undefined {
  return Object.prototype.hasOwnProperty.call(DEPRECATED_METHOD_NAMES, name)
    ? DEPRECATED_METHOD_NAMES[name as keyof typeof DEPRECATED_METHOD_NAMES]
    : undefined;
}

/** What --help and the MCP listing say of an old name. */
export const deprecationNote = (old: string, current: string) =>
  `deprecated: ${old} is now ${current}; the old name goes in the next release`;
