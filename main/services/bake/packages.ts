/**
 * The guest's packages are fetched on the host, so the guest needs no network: apt-get on the
 * host resolves against the GUEST's dpkg status (Dir::State::status), so it picks exactly what the
 * guest lacks, and downloads into a cache directory the next bake reuses.
 */
import { existsSync, linkSync, copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppError } from '../../../shared/contract/errors';
import { run } from './tools';

export interface FetchedPackage {
  file: string;
  name: string;
  version: string;
  bytes: number;
}

function hostCodename(): string {
  try {
    return /^VERSION_CODENAME=["']?([a-z]+)/m.exec(readFileSync('/etc/os-release', 'utf8'))?.[1] ?? '';
  } catch {
    return '';
  }
}

/** apt's file name → name and version (`docker.io_20.10.24+dfsg1-1+deb12u1+b6_amd64.deb`, version epochs as %3a). */
export function debName(file: string): { name: string; version: string } {
  const [name = '', version = ''] = file.replace(/\.deb$/, '').split('_');
  return { name, version: decodeURIComponent(version) };
}

/**
 * Resolves `wanted` against the guest's status file and makes sure every .deb is in `cacheDir`.
 * Returns the files for this guest (hard-linked into `outDir`).
 */
export async function fetchPackages(o: {
  wanted: string[];
  dpkgStatus: string;
  guestCodename: string;
  cacheDir: string;
  outDir: string;
  signal?: AbortSignal;
  log?: (l: string) => void;
}): Promise<FetchedPackage[]> {
  if (o.wanted.length === 0) return [];
  const host = hostCodename();
  if (!host || host !== o.guestCodename) {
    throw new AppError(
      'unsupported',
      `the guest is Debian-family "${o.guestCodename || 'unknown'}" but this host's apt serves "${host || 'unknown'}": packages ` +
        `fetched here would not fit the guest. Bake on a ${o.guestCodename || 'matching'} host, or pass docker: "skip" with no ` +
        `extraPackages`,
    );
  }
  mkdirSync(join(o.cacheDir, 'partial'), { recursive: true });
  // --print-uris leaves out what the archives dir already holds: resolve against an empty one.
  const empty = join(o.outDir, '..', 'apt-resolve');
  mkdirSync(join(empty, 'partial'), { recursive: true });
  const common = (archives: string) => [
    '-y',
    '-q',
    '--no-install-recommends',
    '-o',
    `Dir::State::status=${o.dpkgStatus}`,
    '-o',
    `Dir::Cache::archives=${archives}`,
    '-o',
    'Debug::NoLocking=1',
    '-o',
    'APT::Sandbox::User=root',
  ];
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  let uris: string;
  try {
    uris = await run('apt-get', ['install', '--print-uris', ...common(empty), ...o.wanted], {
      env,
      signal: o.signal,
      what: 'apt-get (resolve the guest packages)',
    });
  } catch (e) {
    if ((e as AppError).code === 'cancelled') throw e;
    throw new AppError(
      'invalid_request',
      `apt cannot install ${o.wanted.join(', ')} on this guest: ${(e as Error).message.split('\n').slice(1).join(' ').trim()}`,
    );
  }
  const files = [...uris.matchAll(/^'[^']+' (\S+\.deb) (\d+) /gm)].map((m) => ({ file: m[1] ?? '', bytes: Number(m[2]) }));
  if (files.some((f) => !existsSync(join(o.cacheDir, f.file)))) {
    await run('apt-get', ['install', '--download-only', ...common(o.cacheDir), ...o.wanted], {
      env,
      signal: o.signal,
      onLine: o.log,
      what: 'apt-get --download-only',
      hint: "the host reaches Debian's mirror through its apt sources; check them with `apt-get update`",
    });
  }
  mkdirSync(o.outDir, { recursive: true });
  return files.map((f) => {
    const src = join(o.cacheDir, f.file);
    if (!existsSync(src)) throw new AppError('internal', `apt reported ${f.file} but it is not in ${o.cacheDir}`);
    const dst = join(o.outDir, f.file);
    try {
      linkSync(src, dst);
    } catch {
      copyFileSync(src, dst);
    }
    return { file: dst, ...debName(f.file), bytes: f.bytes };
  });
}
