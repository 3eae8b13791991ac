export const NODE_MAJOR: number;
export const NODE_VERSION: string;
export function nodePackage(platform?: string, arch?: string): string;
export interface Runtime {
  execPath: string;
  binDir: string;
  version: string;
  from: 'machine' | 'registry';
  nodedir: string | null;
}
export function ensureNode(root?: string, log?: (m: string) => void): Runtime;
export function runtimeEnv(rt: Runtime, env?: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
export function installIfNeeded(root: string, rt: Runtime, log?: (m: string) => void): boolean;
