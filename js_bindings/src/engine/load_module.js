// Loads the Emscripten module (SIMD or baseline build) in Node.js and in browsers/workers.
//
// The package's own builds come from ../wasm_builds.js, which names them by literals bundlers
// see (esbuild bundles the glue but leaves the .wasm URL as it is, relative to the bundle: copy
// dist/*.wasm to ../dist/ next to the bundle, or pass options.distUrl). A distUrl is the user's,
// known only at run time: it is resolved against the page, worker or current directory here,
// never through new URL(expr, import.meta.url) (webpack turns that form into a context module of
// this package's folder).
//
// The .wasm is fetched (or, in Node, read) once and checked here, then compiled and handed to the
// glue through instantiateWasm: the glue itself would fetch it up to three times and, on a 404 or
// a dev server's index.html, abort with a CompileError naming no URL.

import { BUILDS } from '../wasm_builds.js';
import { throwBindingErrors } from './bindings.js';
import { wasmSimdSupported } from './wasm_features.js';
import { compileWasm } from './wasm_source.js';

const isNode = typeof process !== 'undefined' && process.versions != null &&
  process.versions.node != null && typeof window === 'undefined';

// Specifiers bundlers do not try to resolve: these branches run in Node only.
const NODE_URL = 'node:url';

// The folder a distUrl names, as a URL ending in '/': relative to the page (document.baseURI), the
// worker (location) or, in Node, the current directory.
async function distFolder(distUrl) {
  let base = globalThis.document?.baseURI ?? globalThis.location?.href;
  if (base === undefined && isNode) {
    const { pathToFileURL } = await import(/* webpackIgnore: true */ /* @vite-ignore */ NODE_URL);
    base = pathToFileURL(`${process.cwd()}/`).href;
  }
  const folder = new URL(distUrl, base);
  if (!folder.pathname.endsWith('/')) folder.pathname += '/';
  return folder;
}

/**
 * @param {{simd?: 'auto'|boolean, distUrl?: string|URL}} options
 *   distUrl: a folder serving fedleaf_core*.{js,wasm} to load from instead of the package's dist/;
 *   a relative one is resolved against the page's base URL, the worker's URL or Node's current
 *   directory
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
    const folder = await distFolder(options.distUrl);
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
