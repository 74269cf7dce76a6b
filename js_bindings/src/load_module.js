// Loads the Emscripten module (SIMD or baseline build) in Node.js and in browsers/workers.
//
// Both builds are named by string literals — import('../dist/….js') and
// new URL('../dist/….wasm', import.meta.url) — so that bundlers (webpack 5, Vite, Parcel,
// Rollup's URL plugins) see the glue and the .wasm files and emit them. esbuild bundles the glue
// but leaves the URL as it is, relative to the bundle: copy dist/*.wasm to ../dist/ next to the
// bundle, or pass options.distUrl.
//
// The Emscripten 3.1.6 loader sees Node 18+'s global fetch and tries to fetch() the .wasm by
// file path, which fails; so in Node we read the file ourselves and hand it over as wasmBinary.
// In browsers the loader streams the .wasm from the URL given by locateFile.

import { throwBindingErrors } from './bindings.js';
import { wasmSimdSupported } from './wasm_features.js';

const isNode = typeof process !== 'undefined' && process.versions != null &&
  process.versions.node != null && typeof window === 'undefined';

const BUILDS = {
  simd: {
    name: 'fedleaf_core_simd',
    glue: () => import('../dist/fedleaf_core_simd.js'),
    wasm: () => new URL('../dist/fedleaf_core_simd.wasm', import.meta.url),
  },
  baseline: {
    name: 'fedleaf_core',
    glue: () => import('../dist/fedleaf_core.js'),
    wasm: () => new URL('../dist/fedleaf_core.wasm', import.meta.url),
  },
};

// A specifier bundlers do not try to resolve: this branch runs in Node only.
const NODE_FS = 'node:fs/promises';

/**
 * @param {{simd?: 'auto'|boolean, distUrl?: string|URL}} options
 *   distUrl: a folder serving fedleaf_core*.{js,wasm} to load from instead of ../dist/ (relative
 *   to this file)
 * @returns {Promise<{module: object, simd: boolean}>}
 */
export async function loadModule(options = {}) {
  const wanted = options.simd ?? 'auto';
  if (wanted !== 'auto' && typeof wanted !== 'boolean') {
    throw new TypeError(`options.simd must be 'auto', true or false, got ${String(wanted)}`);
  }
  const supported = wasmSimdSupported();
  if (wanted === true && !supported) {
    throw new Error('options.simd is true but this engine does not support wasm SIMD');
  }
  const simd = wanted === 'auto' ? supported : wanted;
  const build = simd ? BUILDS.simd : BUILDS.baseline;
  let factory;
  let wasmUrl;
  if (options.distUrl !== undefined) {
    const base = new URL(options.distUrl, import.meta.url);
    ({ default: factory } = await import(/* webpackIgnore: true */ /* @vite-ignore */
      new URL(`${build.name}.js`, base).href));
    wasmUrl = new URL(`${build.name}.wasm`, base);
  } else {
    ({ default: factory } = await build.glue());
    wasmUrl = build.wasm();
  }
  const settings = {};
  if (isNode) {
    const { readFile } = await import(/* webpackIgnore: true */ /* @vite-ignore */ NODE_FS);
    settings.wasmBinary = await readFile(wasmUrl);
  } else {
    settings.locateFile = (path) => (path.endsWith('.wasm') ? wasmUrl.href : path);
  }
  const module = throwBindingErrors(await factory(settings));
  return { module, simd };
}
