// The two builds of the wasm module the package ships in dist/, named by string literals —
// import('../dist/….js') and new URL('../dist/….wasm', import.meta.url) — so that bundlers
// (webpack 5, Vite, Parcel, Rollup's URL plugins) see the glue and the .wasm files and emit them.
//
// This file sits directly in src/, one folder below the package root, on purpose: esbuild and
// Vite 6's pre-bundled copy keep the .wasm URL as written, relative to the bundle, and the package
// README tells their users to put the .wasm files at ../dist/ next to it. Moved deeper, the
// literals would become '../../dist/…' and those users' copy step would break.

export const BUILDS = {
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
