// Builds the WebAssembly DSP kernels from their sources (none yet).
