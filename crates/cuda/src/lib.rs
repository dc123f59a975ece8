//! Safe wrappers over the CUDA driver and CUPTI, the CUDA replay backend, and the CUPTI metric catalog.
pub mod loader;
