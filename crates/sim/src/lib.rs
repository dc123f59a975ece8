//! A reference software device for testing kreplay without a GPU. It is a test instrument, not a GPU backend.
