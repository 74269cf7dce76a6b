// Loads the Emscripten module (SIMD or baseline build) in Node.js and in browsers/workers.
//
// Both builds are named by string literals — import('../dist/….js') and
// new URL('../dist/….wasm', import.meta.url) — so that bundlers (webpack 5, Vite, Parcel,
// Rollup's URL plugins) see the glue and the .wasm files and emit them. esbuild bundles the glue
// but leaves the URL as it is, relative to the bundle: copy dist/*.wasm to ../dist/ next to the
// bundle, or pass options.distUrl.
//
// The .wasm is fetched (or, in Node, read) once and checked here, then compiled and handed to the
// glue through instantiateWasm: the glue itself would fetch it up to three times and, on a 404 or
// a dev server's index.html, abort with a CompileError naming no URL.

import { throwBindingErrors } from './bindings.js';
import { wasmSimdSupported } from './wasm_features.js';
import { compileWasm } from './wasm_source.js';

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
    const folder = new URL(options.distUrl, import.meta.url);
    ({ default: factory } = await import(/* webpackIgnore: true */ /* @vite-ignore */
      new URL(`${build.name}.js`, folder).href));
    wasmUrl = new URL(`${build.name}.wasm`, folder);
  } else {
    ({ default: factory } = await build.glue());
    wasmUrl = build.wasm();
  }
  const compiled = await compileWasm(wasmUrl, { isNode });
  // The glue reports a failed instantiateWasm only to the console and never settles: race it.
  let failed;
  const failure = new Promise((resolve, reject) => { failed = reject; });
  const instance = factory({
    instantiateWasm(imports, receive) {
      WebAssembly.instantiate(compiled, imports).then((created) => receive(created, compiled), failed);
      return {};
    },
  });
  const module = throwBindingErrors(await Promise.race([instance, failure]));
  return { module, simd };
}
