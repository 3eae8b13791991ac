export type Abi = { kind: 'node'; abi: number } | { kind: 'napi'; version: number };
export const NATIVE_MODULES: { 'better-sqlite3': string[]; keytar: string[] };
export function addonFile(modulesDir: string, name: keyof typeof NATIVE_MODULES): string;
export function abiOf(file: string): Abi | null;
export function nodeFiles(path: string): string[];
export function loads(abi: Abi | null, expected: number | string): boolean;
export function nativeProblems(modulesDir: string, expected: number | string): string[];
