// Feature detection for the two builds of the module.

// The smallest module using a SIMD instruction: (func (result v128) i32.const 0 i8x16.splat).
// Hand-assembled from the wasm binary format: header, type, function and code sections.
const SIMD_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version 1
  0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b, // type section: () -> v128
  0x03, 0x02, 0x01, 0x00, // function section: one function of type 0
  0x0a, 0x08, 0x01, 0x06, 0x00, 0x41, 0x00, 0xfd, 0x0f, 0x0b, // code: i32.const 0; i8x16.splat; end
]);

/** True when this engine validates wasm SIMD (v128) instructions. */
export function wasmSimdSupported() {
  return WebAssembly.validate(SIMD_PROBE);
}
