// Loads the Emscripten module (SIMD or baseline build) in Node.js and in browsers/workers.
//
// The Emscripten 3.1.6 loader sees Node 18+'s global fetch and tries to fetch() the .wasm by
// file path, which fails; so in Node we read the file ourselves and hand it over as wasmBinary.
// In browsers the loader streams the .wasm from the URL next to this module.

import { wasmSimdSupported } from './wasm_features.js';

const isNode = typeof process !== 'undefined' && process.versions != null &&
  process.versions.node != null && typeof window === 'undefined';

const distUrl = new URL('../dist/', import.meta.url);

/**
 * @param {{simd?: 'auto'|boolean, distUrl?: string|URL}} options
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
  const base = new URL(options.distUrl ?? distUrl, import.meta.url);
  const name = simd ? 'fedleaf_core_simd' : 'fedleaf_core';
  const jsUrl = new URL(`${name}.js`, base);
  const wasmUrl = new URL(`${name}.wasm`, base);
  const { default: factory } = await import(jsUrl.href);
  const settings = {};
  if (isNode) {
    const { readFile } = await import('node:fs/promises');
    settings.wasmBinary = await readFile(wasmUrl);
  } else {
    settings.locateFile = (path) => new URL(path, base).href;
  }
  const module = await factory(settings);
  return { module, simd };
}
